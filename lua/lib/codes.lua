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

-- A call's codes: the value of every code its joins came with, read with
-- one HMGET before them (codes_read; false: unknown) and kept up to date
-- as they redeem, its field ('c:<digest>', made once per call), and the
-- fields they changed (field, value pairs, C_NSET values), written with
-- one HSET (codes_write). Made once at load and reused, like join.lua's
-- tables.
local C_VAL, C_FIELD, C_READ, C_FIELDS, C_SET = {}, {}, {}, {}, {}
local C_NSET = 0

-- codes_read reads the codes of the n digests in digests ('' none).
local function codes_read(digests, n)
  local nread = #C_READ
  for i = 1, nread do
    C_VAL[C_READ[i]], C_FIELD[C_READ[i]], C_READ[i], C_FIELDS[i] = nil, nil, nil, nil
  end
  C_NSET, nread = 0, 0
  for i = 1, n do
    local d = digests[i]
    if d ~= '' and C_VAL[d] == nil then
      local f = 'c:' .. d
      nread = nread + 1
      C_VAL[d], C_FIELD[d], C_READ[nread], C_FIELDS[nread] = false, f, d, f
    end
  end
  if nread == 0 then return end
  local vals = redis.call('HMGET', K_CODES, unpack(C_FIELDS, 1, nread))
  for i = 1, nread do C_VAL[C_READ[i]] = vals[i] or false end
end

-- codes_write writes what the redemptions since the last write changed.
local function codes_write()
  if C_NSET == 2 then
    redis.call('HSET', K_CODES, C_SET[1], C_SET[2])
  elseif C_NSET > 0 then
    bulk('HSET', K_CODES, C_SET, C_NSET)
  end
  C_NSET = 0
end

-- code_take redeems the code whose digest is digest (read by codes_read)
-- for user at now in the event's current phase: nil and the code's
-- number and the use's number when it may, the use then recorded for
-- codes_write (and the code bound to user); else the refusal's reply
-- code, nothing changed. An unknown digest is invalid_code, whatever the
-- reason. ('0' and '' are the common expiry, count and seats: no
-- tonumber for them.)
local function code_take(digest, user, now, phase)
  local v = C_VAL[digest]
  if not v then return 'invalid_code' end
  local id, cphase, uses, used, seats, exp, owner =
    string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
  if not id then return 'invalid_code' end
  if cphase ~= '' and cphase ~= (phase or '') then return 'code_wrong_phase' end
  if exp ~= '0' then
    local e = num(exp)
    if e > 0 and now >= e then return 'code_expired' end
  end
  if owner ~= '' and owner ~= user then return 'code_taken' end
  local n, ns = 1, '1'
  if used ~= '0' then
    n = num(used) + 1
    ns = int(n)
  end
  if n > num(uses) then return 'code_used_up' end
  v = id .. '|' .. cphase .. '|' .. uses .. '|' .. ns .. '|' .. seats .. '|' .. exp .. '|' .. user
  C_VAL[digest] = v
  C_SET[C_NSET + 1], C_SET[C_NSET + 2] = C_FIELD[digest], v
  C_NSET = C_NSET + 2
  if seats ~= '0' and num(seats) > 0 then
    C_SET[C_NSET + 1], C_SET[C_NSET + 2] = 'u:' .. user, seats
    C_NSET = C_NSET + 2
  end
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
