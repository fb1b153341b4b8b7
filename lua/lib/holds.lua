-- holds.lua: how a hold ends, expires or gets its grace, and what the room counts.

-- The hold clock: the time holds are judged by, Redis's clock less the
-- time the event's holds have been paused (a payment-provider outage,
-- provider_state.lua). config holds the pauses that ended as their sum
-- (hold_pause_ms) and a pause in progress as its start (hold_paused_at,
-- absent: running): the clock is now - hold_pause_ms while running and
-- stands at hold_paused_at - hold_pause_ms while paused, so pausing and
-- resuming are O(1) whatever the number of holds. Deadlines in active
-- are on this clock; a reply gives a deadline on Redis's clock, the
-- stored one plus the shift (now - the hold clock), which during a pause
-- moves with now: the time left stands still. With no pause ever, the
-- hold clock is now.
local function hold_clock(now, pause_ms, paused_at)
  local since = num(paused_at)
  if since > 0 then return since - num(pause_ms), true end
  return now - num(pause_ms), false
end

-- How soon a timeout looks again at a hold whose clock is paused
-- (handle_timeout.lua).
local PAUSED_RECHECK_MS = 60000

-- The event's hold clock at now (hold_clock) and whether holds are
-- paused; nil when the event does not exist.
local function event_hold_clock(now)
  local c = redis.call('HMGET', K_CONFIG, 'total', 'hold_pause_ms', 'hold_paused_at')
  if not c[1] then return nil end
  return hold_clock(now, c[2], c[3])
end

-- Free the user's seats that they hold, take them out of the room and
-- give them their final state. Returns the seat ids as kept in useat
-- ('' when none).
local function release_hold(user, final_state)
  local seat = redis.call('HGET', K_USEAT, user)
  if seat and seat ~= '' then
    local mine, freed = 'h:' .. user, 0
    for _, id in ipairs(split_seats(seat)) do
      if redis.call('HGET', K_SEATS, id) == mine then
        free_seat(id) -- (an allocated seat goes back to its channel)
        freed = freed + 1
      end
    end
    if freed > 0 then redis.call('HINCRBY', K_CONFIG, 'held', -freed) end
  else
    seat = ''
  end
  redis.call('ZREM', K_ACTIVE, user)
  redis.call('HDEL', K_UGRACE, user)
  redis.call('HSET', K_STATE, user, final_state)
  return seat
end

-- The deadline an overdue hold gets instead of being released: a hold in
-- payment_pending is extended once by grace_ms when that lands after now.
-- nil: the hold is released.
local function grace_deadline(user, deadline, now, grace)
  if grace > 0 and deadline + grace > now and redis.call('HGET', K_STATE, user) == 'payment_pending'
      and not redis.call('HGET', K_UGRACE, user) then
    return deadline + grace
  end
  return nil
end

-- A hold whose deadline has passed. A hold in payment_pending gets the
-- grace period once (the deadline moves to deadline + grace_ms), so a
-- payment in flight is not lost; any other hold is released as expired.
-- Returns 'extended', new_deadline, '' or 'released', deadline, seat
-- (the seat ids as kept in useat).
local function expire_due(user, deadline, now)
  local extended = grace_deadline(user, deadline, now, num(redis.call('HGET', K_CONFIG, 'grace_ms')))
  if extended then
    redis.call('HSET', K_UGRACE, user, '1')
    redis.call('ZADD', K_ACTIVE, extended, user)
    return 'extended', extended, ''
  end
  return 'released', deadline, release_hold(user, 'expired')
end

-- Live holds that count against the room's capacity at now (the hold
-- clock's): holds whose
-- deadline has not passed, plus overdue payment_pending holds that the next
-- promotion will extend by the grace period instead of releasing (promotion
-- counts those, so immediate admission must too). Looks at no more than
-- limit overdue holds: returns nil when more are overdue (undecided).
local function holds_counted(now, limit)
  local live = redis.call('ZCOUNT', K_ACTIVE, '(' .. int(now), '+inf')
  local overdue = redis.call('ZRANGEBYSCORE', K_ACTIVE, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit + 1)
  if #overdue > 2 * limit then return nil end
  local grace = num(redis.call('HGET', K_CONFIG, 'grace_ms'))
  for i = 1, #overdue, 2 do
    if grace_deadline(overdue[i], tonumber(overdue[i + 1]), now, grace) then live = live + 1 end
  end
  return live
end
