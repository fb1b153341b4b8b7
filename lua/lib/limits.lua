-- limits.lua: the abuse limits, GCRA over one key per limit after the event's.

-- The abuse limits (booking.Limit; docs/booking-engine.md "Abuse limits"),
-- checked in the same atomic step as the operation they guard. Each limit
-- is GCRA over one key after the event's (KEYS[NKEYS + 1..]): the key
-- holds the theoretical arrival time (unix ms, fractional) of the next
-- request; limit slot s has an emission interval L_STEP[s] (ms between
-- requests at the sustained rate: period / rate) and a burst L_BURST[s]
-- (requests that may arrive at once, the rate). A request is allowed when
-- every limit allows it; then each key moves one interval ahead and
-- expires when its bucket would be full again. A call reads each key once
-- (limits_read) and writes each counted key once (limits_write), with the
-- time of its last count; the times are passed to SET as numbers (Redis
-- writes them with 17 significant digits): no string.format, no rounding.
-- A batch's requests move the keys one after the other, exactly as
-- separate calls would. Everything here lives for one call (a call runs
-- alone, like KEYS), in tables made once at load and reused: with a
-- table per request and closures per call a lone join cost Redis
-- markedly more (docs/benchmarks.md "Joins and reads in batches" has what
-- a table and a closure cost; BenchmarkEnqueue and BenchmarkPosition in
-- pkg/booking run this path).
local L_M, L_STEP, L_BURST = 0, {}, {}
local L_TAT, L_COUNTED = {}, {} -- per limit key: its time (nil: no key), the now of its last count
local L_NEW, L_KEY = {}, {}     -- the request limits_wait looked at, per slot: its new time, its key's number

-- limits_at sets m limit slots, their intervals and bursts from ARGV[pairs].
local function limits_at(m, pairs)
  L_M = m
  for s = 1, m do
    L_STEP[s], L_BURST[s] = tonumber(ARGV[pairs + 2 * s - 2]), tonumber(ARGV[pairs + 2 * s - 1])
  end
end

-- limits_read reads the limit keys (one MGET; none without limits).
local function limits_read()
  local nlim = #KEYS - NKEYS
  for k = 1, nlim do L_TAT[k], L_COUNTED[k] = nil, nil end
  if nlim > 0 and L_M > 0 then
    local cur = redis.call('MGET', unpack(KEYS, NKEYS + 1, NKEYS + nlim))
    for k = 1, nlim do L_TAT[k] = tonumber(cur[k]) end
  end
end

-- The ms until a request at now would be allowed (0: allowed now). Its
-- key for slot s is the s-th after the event's, or, with keyat, number
-- ARGV[keyat + s] among them (a batch). The keys' numbers and their new
-- times are left in L_KEY and L_NEW for limits_take. (Plain comparisons,
-- not math.max: this runs per request and limit.)
local function limits_wait(now, keyat)
  local wait = 0
  for s = 1, L_M do
    local k = s
    if keyat then k = tonumber(ARGV[keyat + s]) end
    local step, t = L_STEP[s], L_TAT[k] or now
    if t < now then t = now end
    t = t + step
    local late = t - L_BURST[s] * step - now
    if late > wait then wait = late end
    L_NEW[s], L_KEY[s] = t, k
  end
  if wait == 0 then return 0 end
  return math.ceil(wait)
end

-- Counts the request limits_wait just looked at, at now, against its
-- limits, except slot spare when its key does not exist (0: none;
-- enqueue's placing join, which does not count against the user's own
-- limit).
local function limits_take(now, spare)
  for s = 1, L_M do
    local k = L_KEY[s]
    if s ~= spare or L_TAT[k] then L_TAT[k], L_COUNTED[k] = L_NEW[s], now end
  end
end

-- Writes each limit key counted in this call, once.
local function limits_write()
  for k = 1, #KEYS - NKEYS do
    local now = L_COUNTED[k]
    if now then
      redis.call('SET', KEYS[NKEYS + k], L_TAT[k], 'PX', int(math.max(1, math.ceil(L_TAT[k] - now))))
    end
  end
end

-- limited checks one request's limits (intervals and bursts from
-- ARGV[first]) and, when they allow, counts it: returns 0 when allowed,
-- else the ms until the most limiting key would allow it (no key changed).
local function limited(first, now)
  limits_at(#KEYS - NKEYS, first)
  limits_read()
  local wait = limits_wait(now)
  if wait > 0 then return wait end
  limits_take(now, 0)
  limits_write()
  return 0
end
