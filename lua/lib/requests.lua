-- requests.lua: where the requests of a join or position call are in ARGV.

-- The batched join and read (enqueue_joins, read_positions) run one call's
-- requests in order, each as if it were a call of its own in that order,
-- reading what they share once and writing what they defer once. A
-- request's values are read from ARGV where the calling script put them
-- (reqs_at): request i's start at ARGV[R_FIRST + (i - 1) * R_STRIDE] with
-- the user id, then (joins) own, then, when R_KEYED, the
-- number (from 1, among the keys after the event's) of its key per limit
-- slot; without R_KEYED slot s's key is the s-th after the event's.
local R_N, R_FIRST, R_STRIDE, R_KEYED, R_HEAD
-- Per request: user, waiting score (false: none), state (nil: none); made
-- once at load and reused, like limits.lua's tables (same benchmarks).
local R_USERS, R_SCORE, R_STATE = {}, {}, {}

-- reqs_at sets where a call's n requests and their limits are (above):
-- each request is head values (then its m key numbers when keyed)
-- from ARGV[first]; the limits' intervals and bursts from ARGV[pairs].
local function reqs_at(n, first, head, keyed, m, pairs)
  R_N, R_FIRST, R_HEAD, R_KEYED = n, first, head, keyed
  R_STRIDE = head
  if keyed then R_STRIDE = head + m end
  limits_at(m, pairs)
end

-- Reads the limit keys (limits_read) and every request's waiting score
-- and, for those not waiting, state (one ZMSCORE, one HMGET).
local function reqs_read()
  limits_read()
  for i = 1, R_N do R_USERS[i] = ARGV[R_FIRST + (i - 1) * R_STRIDE] end
  if R_N == 1 then
    -- (one request: two plain reads, no tables to make)
    local score = redis.call('ZSCORE', K_WAITING, R_USERS[1])
    R_SCORE[1], R_STATE[1] = score, nil
    if not score then R_STATE[1] = redis.call('HGET', K_STATE, R_USERS[1]) end
    return
  end
  local ask = 0
  for i = 1, R_N, 1000 do
    local part = redis.call('ZMSCORE', K_WAITING, unpack(R_USERS, i, math.min(i + 999, R_N)))
    for j = 1, #part do
      R_SCORE[i + j - 1], R_STATE[i + j - 1] = part[j], nil
      if not part[j] then ask = ask + 1 end
    end
  end
  if ask == 0 then return end
  local fields, idx = {}, {}
  for i = 1, R_N do
    if not R_SCORE[i] then
      fields[#fields + 1], idx[#idx + 1] = R_USERS[i], i
    end
  end
  for a = 1, #fields, 1000 do
    local part = redis.call('HMGET', K_STATE, unpack(fields, a, math.min(a + 999, #fields)))
    for b = 1, #part do R_STATE[idx[a + b - 1]] = part[b] end
  end
end

-- The ms until request i's limits allow it at now, the call's time (0:
-- now).
local function req_wait(i, now)
  if L_M == 0 then return 0 end
  if R_KEYED then return limits_wait(now, R_FIRST + (i - 1) * R_STRIDE + R_HEAD - 1) end
  return limits_wait(now)
end
