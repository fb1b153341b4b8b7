-- codes.lua: access codes, redeemed by the join that uses them.

-- An event's codes are fields of its codes hash (load_codes.lua writes
-- them): 'c:<digest>' (the code's HMAC, never the code) is
-- '<id>|<phase>|<uses>|<used>|<seats>|<expires_ms>|<user>': the code's
-- number, the phase it opens ('' any), how many joins it allows and has
-- made, the seats per order of its holder (0: the event's max_seats),
-- its expiry (0: none) and the user it is bound to ('' until the first
-- redemption). 'u:<user>' is the seat limit a redemption gave its user
-- (lock_seat.lua reads it); 'r:<user>' marks a user the registration's
-- draw selected.

-- code_take redeems the code whose digest is digest for user at now in
-- the event's current phase: nil and the code's number and the use's
-- number when it may, the use then recorded (and the code bound to
-- user); else the refusal's reply code, nothing changed. An unknown
-- digest is invalid_code, whatever the reason.
local function code_take(digest, user, now, phase)
  local f = 'c:' .. digest
  local v = redis.call('HGET', K_CODES, f)
  if not v then return 'invalid_code' end
  local id, cphase, uses, used, seats, exp, owner =
    string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
  if not id then return 'invalid_code' end
  if cphase ~= '' and cphase ~= (phase or '') then return 'code_wrong_phase' end
  local e = num(exp)
  if e > 0 and now >= e then return 'code_expired' end
  if owner ~= '' and owner ~= user then return 'code_taken' end
  local n = num(used) + 1
  if n > num(uses) then return 'code_used_up' end
  redis.call('HSET', K_CODES, f, id .. '|' .. cphase .. '|' .. uses .. '|' .. int(n) .. '|' .. seats .. '|' .. exp .. '|' .. user)
  if num(seats) > 0 then redis.call('HSET', K_CODES, 'u:' .. user, seats) end
  return nil, id, n
end

-- code_selected: whether user was selected in the event's registration
-- draw ('r:<user>' in codes, written by load_codes): who may join while
-- the audience is 'registered'.
local function code_selected(user)
  return redis.call('HEXISTS', K_CODES, 'r:' .. user) == 1
end

-- code_seats is the seats per order a redeemed code gave user (nil:
-- none, the event's max_seats applies).
local function code_seats(user)
  return tonumber(redis.call('HGET', K_CODES, 'u:' .. user))
end
