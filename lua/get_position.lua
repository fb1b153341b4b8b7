-- get_position.lua — where a user stands.
-- A waiting user's call counts as a sign of presence (abandonment heartbeat).
-- KEYS: the event key set (lib.lua)
--   reads:  active, config, rate, state, upay, useat, useq, waiting
--   writes: seen
--   and after them the abuse-limit keys, one per limit (lib.lua limited)
-- ARGV: 1 user_id, 2 now_ms, then per limit its interval_ms and burst
-- Replies:
--   {'ok', state, sequence, position, seat_id, payment_id, deadline_ms,
--    sold_out (0|1), served, waiting_count, admitted_last_minute,
--    admit_per_minute}
--   {'not_found', sold_out, served, waiting_count, admitted_last_minute,
--    admit_per_minute}
--   admit_per_minute: the event's rate cap (0 = none), for the ETA;
--   a last element sales_start_ms. Before it a waiting (pre-queued) user's
--   position is 0: the draw's order stays secret until the start.
--   {'event_not_found'}
--   {'rate_limited', retry_after_ms}: a limit refused the read (nothing changed)
local user, now = ARGV[1], tonumber(ARGV[2])
local c = redis.call('HMGET', K_CONFIG, 'total', 'sold', 'served', 'abandon_ms', 'admit_per_minute', 'sales_start_ms')
if not c[1] then
  return {'event_not_found'}
end
local wait = limited(3, now)
if wait > 0 then return {'rate_limited', wait} end
local sold_out = 0
if num(c[2]) >= num(c[1]) then sold_out = 1 end
local served, waiting = num(c[3]), redis.call('ZCARD', K_WAITING)
local rate = admitted_last_minute(now)

-- a waiting user is only a member of waiting (lib.lua): score = sequence.
-- Most polls are waiting users', so waiting is read first and the state
-- field only for a user who is not in it (one call less per waiting poll).
local score = tonumber(redis.call('ZSCORE', K_WAITING, user))
if not score then
  local state = redis.call('HGET', K_STATE, user)
  -- (a state field 'waiting' without a waiting entry: none to report)
  if not state or state == 'waiting' then
    return {'not_found', sold_out, served, waiting, rate, num(c[5]), num(c[6])}
  end
  return {'ok', state, num(redis.call('HGET', K_USEQ, user)), 0, redis.call('HGET', K_USEAT, user) or '',
    redis.call('HGET', K_UPAY, user) or '', num(redis.call('ZSCORE', K_ACTIVE, user)), sold_out, served,
    waiting, rate, num(c[5]), num(c[6])}
end
if score < 1 then score = num(redis.call('HGET', K_USEQ, user)) end -- pre-queued: a draw key
local position = 0
if now >= num(c[6]) then position = redis.call('ZRANK', K_WAITING, user) + 1 end
if num(c[4]) > 0 then redis.call('ZADD', K_SEEN, ARGV[2], user) end
return {'ok', 'waiting', score, position, '', '', 0, sold_out, served, waiting, rate, num(c[5]), num(c[6])}
