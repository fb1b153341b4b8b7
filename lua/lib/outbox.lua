-- outbox.lua: the outbox's entries, facts still to be announced, one
-- field per fact, never reused (docs/booking-engine.md "The outbox"):
--   'p:<seq>:<user>' -> 'seq|deadline_ms||at_ms'  promoted (room.lua admit_all)
--   'x:<seq>:<user>' -> 'seq|deadline_ms|seats|at_ms'  expired
--   'c:<seq>:<user>' -> 'seq|from|seats|at_ms'    cancelled ('abandoned': from promote;
--                                                 'phase_ended': from apply_schedule)
--   'j:<seq>'        -> 'seq|user|code|at_ms'     joined (join.lua); code is
--                                                 the access code's use,
--                                                 'id:use:phase', '' none
--   'r:<seq_base>'   -> 'seq_base|reason||at_ms'  restored (restore_event.lua)
-- A value may carry a fifth part, 'r' or 'k': its RabbitMQ (r) or Kafka
-- (k) side was announced already (ack_outbox.lua).

-- Writes the expiry of user's hold of join s (int) whose deadline passed,
-- released at now (as given) with its seats; returns the value.
local function outbox_expired(s, user, deadline, seats, now)
  local v = s .. '|' .. int(deadline) .. '|' .. seats .. '|' .. now
  redis.call('HSET', K_OUTBOX, 'x:' .. s .. ':' .. user, v)
  return v
end

-- Writes the cancellation of user's join s (int), from 'queue', 'active',
-- 'abandoned' or 'phase_ended', with its seats, at now (as given);
-- returns the value.
local function outbox_cancelled(s, user, from, seats, now)
  local v = s .. '|' .. from .. '|' .. seats .. '|' .. now
  redis.call('HSET', K_OUTBOX, 'c:' .. s .. ':' .. user, v)
  return v
end
