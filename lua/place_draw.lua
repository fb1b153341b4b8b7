-- place_draw: a later phase's pre-queue drawn into the queue (booking.Store.ClosePhaseDraw; lib/draw.lua).
-- ARGV: 1 mode, then
--   'close': nothing; closes the next phase's pre-queue when its start passed, answers the pending draw
--   'place': 2 phase id, 3 the rank of the first user, 4.. users in draw order
--   'done': 2 phase id
-- Replies: close {'ok', phase ('' none pending), base, count, start_ms}; place {'ok', placed}; done {'ok'} (also
--   when that phase's draw is done already)
--   | {'event_not_found'} | {'invalid_argument'} (not that phase's draw pending)
-- KEYS: config, waiting, seq, state, pq, pqdraw (ops.go)
-- 'place' puts each user still in the closed list and still 'prequeued'
-- (not cancelled, not pre-queued again for a later phase) into waiting at
-- base + rank, after everyone waiting before the phase's start and before
-- every later joiner (whose sequences are above base + count); it is
-- idempotent, so a draw cut short is placed again. 'done' (after
-- queue_randomized is out) lets promotion go on: it clears the pending
-- draw, empties the closed list and marks the phase 'pq_drawn:<id>'.
local mode = ARGV[1]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local pqd = redis.call('HGET', K_CONFIG, 'pqd')
if mode == 'close' then
  if not pqd then
    pq_close(clock())
    pqd = redis.call('HGET', K_CONFIG, 'pqd')
  end
  local phase, start, base, n = pq_parse(pqd)
  return {'ok', phase or '', base or 0, num(n), start or 0}
end
local phase, _, base = pq_parse(pqd)
if mode == 'done' and phase ~= ARGV[2] and redis.call('HGET', K_CONFIG, 'pq_drawn:' .. (ARGV[2] or '')) == '1' then
  return {'ok'} -- done already (another promoter): a repeat changes nothing
end
if (mode ~= 'place' and mode ~= 'done') or not phase or phase ~= ARGV[2] then return {'invalid_argument'} end
if mode == 'done' then
  redis.call('HDEL', K_CONFIG, 'pqd')
  redis.call('HSET', K_CONFIG, 'pq_drawn:' .. ARGV[2], '1')
  redis.call('DEL', K_PQDRAW)
  return {'ok'}
end
local first, placed = num(ARGV[3]), 0
for k = 4, #ARGV do
  local user = ARGV[k]
  if redis.call('HGET', K_STATE, user) == 'prequeued' and redis.call('ZSCORE', K_PQDRAW, user)
    and not redis.call('ZSCORE', K_PQ, user) then
    redis.call('ZADD', K_WAITING, int(base + first + k - 4), user)
    redis.call('HDEL', K_STATE, user)
    placed = placed + 1
  end
end
return {'ok', placed}
