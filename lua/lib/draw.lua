-- draw.lua: the pre-queue and its draw (docs/booking-engine.md "The
-- pre-queue and its draw").

-- Whether a join at now, before the sales start, is pre-queued: the
-- event has a pre-queue (early_join_ms > 0 and a draw seed) and now is
-- in [start - early_join_ms, start).
local function prequeue_open(now, start, early_join_ms, seed)
  local early_ms = num(early_join_ms)
  return not (early_ms <= 0 or not seed or seed == '' or now < start - early_ms)
end

-- A pre-queued user's score in waiting, its draw key: h - 2^53, h the
-- first 13 hex digits (52 bits) of sha1(seed .. ':' .. user), so
-- pre-queued users rank before every later joiner (score = sequence >= 1)
-- in a random order fixed by the committed seed (ties: by user id).
local function draw_score(seed, user)
  local h = tonumber(string.sub(redis.sha1hex(seed .. ':' .. user), 1, 13), 16)
  return int(h - 9007199254740992)
end

-- A later phase's pre-queue (docs/booking-engine.md "A later phase's
-- pre-queue"). apply_schedule writes the next phase's into the config
-- when it applies a slot: 'pq' = '<phase>|<open_ms>|<start_ms>|<audience>'
-- (its window [start - early_join_ms, start) and who it admits). A join
-- in that window that the current phase refuses and that phase admits
-- waits outside waiting, in the zset pq (score: its sequence), with the
-- state 'prequeued' and its sequence in useq, so it neither blocks nor
-- overtakes the running phase's queue. One field each for the open list
-- and the pending draw keeps the join's config read to two fields more
-- (tools/unitcost join).

-- pq_parse reads the config's 'pq' (open) or 'pqd' (pending draw,
-- '<phase>|<start_ms>|<base>|<count>'): its phase and three numbers,
-- then the rest (pq's audience); nil for none.
local function pq_parse(v)
  if not v then return nil end
  local phase, a, b, rest = string.match(v, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
  return phase, num(a), num(b), rest
end

-- pq_close closes the next phase's pre-queue once its start passed: the
-- next n sequence numbers (n = |pq|) are reserved for its draw (the
-- counter jumps to base + n), pq becomes pqdraw (the closed list, which
-- only the draw reads and empties), and the config records the pending
-- draw ('pqd'; promotion answers draw_pending while it is set), the
-- phase's closed list ('pq_closed:<id>' = '<base>|<n>|<start_ms>') and
-- pq_lo, the lowest base of any such draw: a waiting score above it may
-- be a drawn rank (base + rank) rather than a sequence (wait_seq). The
-- pre-queue of the phase after is not closed while the draw before is
-- pending (its list would take pqdraw). true when it closed one.
local function pq_close(now)
  local c = redis.call('HMGET', K_CONFIG, 'pq', 'pqd', 'pq_lo')
  local phase, _, start = pq_parse(c[1])
  if not phase or now < start or c[2] then return false end
  local n = redis.call('ZCARD', K_PQ)
  local base = num(redis.call('GET', K_SEQ))
  local b, ns, st = int(base), int(n), int(start)
  redis.call('DEL', K_PQDRAW)
  if n > 0 then
    redis.call('SET', K_SEQ, int(base + n))
    redis.call('RENAME', K_PQ, K_PQDRAW)
    if not c[3] then redis.call('HSET', K_CONFIG, 'pq_lo', b) end
  end
  redis.call('HSET', K_CONFIG, 'pqd', phase .. '|' .. st .. '|' .. b .. '|' .. ns,
    'pq_closed:' .. phase, b .. '|' .. ns .. '|' .. st)
  redis.call('HDEL', K_CONFIG, 'pq')
  return true
end

-- pq_start_of is the start of the phase a 'prequeued' user waits for:
-- the open pre-queue's when the user is in it, else the closed one's.
local function pq_start_of(user)
  local c = redis.call('HMGET', K_CONFIG, 'pq', 'pqd')
  local _, _, open = pq_parse(c[1])
  local _, closed = pq_parse(c[2])
  if redis.call('ZSCORE', K_PQ, user) then return open or 0 end
  return closed or 0
end
