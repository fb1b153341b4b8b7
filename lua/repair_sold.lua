-- repair_sold: seats the ledger sold become sold in Redis; a seat Redis sold to another is reported.
-- ARGV: 4 per seat: user_id, seat_id, payment_id, join sequence
-- Replies: {'ok', repaired, already, {conflicting seat ids}, {unknown seat ids}}
--   | {'event_not_found'}
-- KEYS: config, seats, waiting, active, state, useq, useat, upay, ugrace, status, seatidx, runs, alloc (ops.go)
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local repaired, already, conflicts, unknown = 0, 0, {}, {}
for i = 1, #ARGV - 3, 4 do
  local user, seat, pid, seq = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local v = redis.call('HGET', K_SEATS, seat)
  if not v then
    unknown[#unknown + 1] = seat
  elseif v == 's:' .. user then
    already = already + 1
  elseif string.sub(v, 1, 2) == 's:' then
    conflicts[#conflicts + 1] = seat
  else
    if string.sub(v, 1, 2) == 'h:' then
      local holder = string.sub(v, 3)
      if holder ~= user then
        -- the holder's whole selection ends (all of it or none)
        release_hold(holder, 'expired')
      else
        redis.call('HINCRBY', K_CONFIG, 'held', -1)
      end
    elseif string.sub(v, 1, 2) == 'r:' or string.sub(v, 1, 2) == 'k:' then
      -- the ledger's sale wins over an operator's hold or kill (mark_seats)
      redis.call('HINCRBY', K_CONFIG, string.sub(v, 1, 1) == 'r' and 'reserved' or 'killed', -1)
    elseif string.sub(v, 1, 2) == 'c:' then
      redis.call('HINCRBY', K_CONFIG, 'allocated', -1)
    end
    redis.call('HSET', K_SEATS, seat, 's:' .. user)
    set_seat_status(seat, 's')
    redis.call('HINCRBY', K_CONFIG, 'sold', 1)
    local state = user_state(user)
    if not state or (state ~= 'waiting' and state ~= 'active' and state ~= 'seat_selected'
        and state ~= 'payment_pending')
        or string.find(',' .. (redis.call('HGET', K_USEAT, user) or '') .. ',', ',' .. seat .. ',', 1, true) then
      -- (the seat is one of the user's current selection)
      local prev = redis.call('HGET', K_USEAT, user)
      if prev and state == 'completed' and redis.call('HGET', K_UPAY, user) == pid
          and not string.find(',' .. prev .. ',', ',' .. seat .. ',', 1, true) then
        seat = prev .. ',' .. seat -- another seat of the same order
      elseif prev and string.find(',' .. prev .. ',', ',' .. seat .. ',', 1, true) then
        seat = prev
      end
      redis.call('ZREM', K_ACTIVE, user)
      redis.call('HDEL', K_UGRACE, user)
      redis.call('HSET', K_STATE, user, 'completed')
      redis.call('HSET', K_USEAT, user, seat)
      redis.call('HSET', K_UPAY, user, pid)
      redis.call('HSET', K_USEQ, user, seq)
    end
    repaired = repaired + 1
  end
end
return {'ok', repaired, already, conflicts, unknown}
