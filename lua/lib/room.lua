-- room.lua: admission into the booking room, its capacity and the admission rate.

local RATE_BUCKET_MS = 10000

-- Room capacity right now: the configured size, but never more than the
-- seats not yet sold (admitting more users than seats only makes them wait
-- inside the room instead of outside).
local function room_capacity(capacity, total, sold)
  local left = total - sold
  if left < capacity then return left end
  return capacity
end

-- The admission log (docs/fairness.md): every admission appends one
-- entry 'seq|at_ms|reason|user' to the event's list alog, in the order of
-- admission, in the same step as the admission. The log's hash chain,
-- salted user hashes and signed heads are computed by Go from this list
-- (pkg/fairlog), so the script pays for one RPUSH per batch and no hash.
-- Any script that admits (or offers seats to) a user calls it with that
-- script's entries and declares the alog key in ops.go; reason is one word
-- ('promoted', 'joined'; an offer: 'offered').
local function log_admissions(entries)
  if #entries > 0 then bulk('RPUSH', K_ALOG, entries) end
end

-- Let users into the room: users[i], whose join sequence is seqs[i], no
-- longer in waiting. Each gets the same deadline, state active, its
-- sequence in useq, and an outbox entry so the side effects
-- (timeout message, notification, Kafka event) are announced even if the
-- caller dies before doing it; the served counter and the rate bucket move
-- once for the batch. One command per structure, not per user: this is the
-- hot loop of promotion. (A user's seat, payment and grace fields are
-- already clear: a new join clears what a previous hold left.) The
-- deadline is kept on the hold clock (now - shift, holds.lua hold_clock)
-- and returned, and announced in the outbox, on Redis's. Every admission
-- is appended to the admission log (log_admissions) with reason, default
-- 'promoted'.
local function admit_all(users, seqs, now, hold_ms, shift, reason)
  local deadline = now + hold_ms
  -- numbers are written as strings made once (int), not converted per use
  local d, tail = int(deadline), '||' .. int(now)
  local dh = d
  if shift ~= 0 then dh = int(deadline - shift) end
  local zadd, states, useq, outbox, max_seq, alog = {}, {}, {}, {}, 0, {}
  local at = '|' .. int(now) .. '|' .. (reason or 'promoted') .. '|'
  for i = 1, #users do
    local user, seq = users[i], seqs[i]
    local s = int(seq)
    zadd[#zadd + 1] = dh
    zadd[#zadd + 1] = user
    states[#states + 1] = user
    states[#states + 1] = 'active'
    useq[#useq + 1] = user
    useq[#useq + 1] = s
    outbox[#outbox + 1] = 'p:' .. s .. ':' .. user
    outbox[#outbox + 1] = s .. '|' .. d .. tail
    alog[i] = s .. at .. user
    if seq > max_seq then max_seq = seq end
  end
  if #zadd == 0 then return deadline end
  bulk('ZADD', K_ACTIVE, zadd)
  bulk('HSET', K_STATE, states)
  bulk('HSET', K_USEQ, useq)
  bulk('HSET', K_OUTBOX, outbox)
  log_admissions(alog)
  if max_seq > num(redis.call('HGET', K_CONFIG, 'served')) then
    redis.call('HSET', K_CONFIG, 'served', int(max_seq))
  end
  local sec = math.floor(now / 1000)
  if redis.call('HINCRBY', K_RATE, 's' .. int(sec), #zadd / 2) == #zadd / 2 then
    -- a new second: drop ten that left the rate cap's window
    local old = {}
    for i = 61, 70 do old[#old + 1] = 's' .. int(sec - i) end
    redis.call('HDEL', K_RATE, unpack(old))
  end
  local bucket = math.floor(now / RATE_BUCKET_MS)
  if redis.call('HINCRBY', K_RATE, int(bucket), #zadd / 2) == #zadd / 2 then
    -- a new bucket: drop the ones that left the one-minute window
    redis.call('HDEL', K_RATE, int(bucket - 6), int(bucket - 7),
      int(bucket - 8), int(bucket - 9), int(bucket - 10))
  end
  return deadline
end

-- Users admitted over the last minute (six 10-second buckets).
local function admitted_last_minute(now)
  local b = math.floor(now / RATE_BUCKET_MS)
  local vals = redis.call('HMGET', K_RATE, int(b), int(b - 1), int(b - 2),
    int(b - 3), int(b - 4), int(b - 5))
  local sum = 0
  for _, v in ipairs(vals) do sum = sum + num(v) end
  return sum
end

-- The rate cap (config admit_per_minute; 0 or absent = off): how many more
-- users may be admitted at now so that no 60-second window admits more
-- than cap. It counts the per-second fields of the last 61 seconds (the
-- second of now - 60 s whole, so the count can only be over), nil when the
-- cap is off. Every admission goes through admit_all, which counts it.
local function cap_left(now, cap)
  if cap <= 0 then return nil end
  local sec = math.floor(now / 1000)
  local f = {}
  for i = 0, 60 do f[#f + 1] = 's' .. int(sec - i) end
  local sum = 0
  for _, v in ipairs(redis.call('HMGET', K_RATE, unpack(f))) do sum = sum + num(v) end
  if sum >= cap then return 0 end
  return cap - sum
end

-- The sales window's end (config sales_end_ms; 0 or absent: none): the
-- sale has ended at now when now is past it, the test join.lua's
-- sales_ended makes. After it nobody is admitted (promote.lua); a user
-- already in the room finishes within their hold unless the event's
-- finish_after_end is '0' (absent: finish), when seat selection, payment
-- start and payment success end with the sale (hold_open_after_end).
-- docs/booking-engine.md "The sales window".
local function sales_ended(now, end_ms)
  local e = num(end_ms)
  return e > 0 and now > e
end

-- Whether a hold may still go on at now (Redis's clock) by the sales
-- window: false once the sale ended for an event whose holds end with it.
local function hold_open_after_end(now)
  local c = redis.call('HMGET', K_CONFIG, 'sales_end_ms', 'finish_after_end')
  return c[2] ~= '0' or not sales_ended(now, c[1])
end
