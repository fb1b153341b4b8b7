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
