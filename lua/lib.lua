-- lib.lua — shared by every booking script: the head of the library lua.Library() builds.
--
-- An event's keys (all under one hash tag {<event_id>}, so a script
-- touches one Redis Cluster slot; built by booking.keysFor in
-- pkg/booking/keys.go). A booking function takes only the ones its
-- header lists (read or written), in this order, as KEYS[1..NKEYS], and
-- finds each in its K_* name below (lua/lua.go binds them per call):
--   1 config   hash  name, capacity, hold_ms, grace_ms, sales_start_ms,
--                    sales_end_ms, batch, abandon_ms, paused, total, held,
--                    sold, served, rows, per_row, created_ms, and
--                    currency, max_seats (seats per order; absent: 4),
--                    prices ('<len>:<cents>,...': the sections' runs of the
--                    seat map in order, for seat_price), sections (JSON, for Go)
--   2 seats    hash  seat_id -> '' (available) | 'h:<user>' (held) | 's:<user>' (sold)
--   3 seatmap  list  seat ids in display order
--   4 waiting  zset  user -> join sequence (FIFO); a pre-queued user's
--                    score is its draw key (< 0, enqueue.lua). A waiting
--                    user's whole record: while waiting a user has no
--                    state field and (unless pre-queued) no useq field,
--                    which keeps a waiting user to one ZSET entry
--                    (docs/capacity-planning.md); user_state and user_seq
--                    read both places.
--   5 active   zset  user -> hold deadline (unix ms): the booking room
--   6 seq      string join sequence counter
--   7 seen     zset  user -> last seen (unix ms), for abandonment
--   8 outbox   hash  facts still to be announced (the transactional outbox),
--                    one field per fact, never reused (keyed by join sequence):
--                    'p:<seq>:<user>' -> 'seq|deadline_ms||at_ms'  promoted
--                    'x:<seq>:<user>' -> 'seq||seat|at_ms'         expired
--                    'c:<seq>:<user>' -> 'seq|from|seat|at_ms'     cancelled
--                    'j:<seq>'        -> 'seq|user||at_ms'         joined (booking_request)
--                    'r:<seq_base>'   -> 'seq_base|reason||at_ms'  restored (event_restored;
--                                        reason 'seats=<n> sold=<n> completed_users=<n>')
--                    A value may carry a fifth part, 'r' or 'k': its RabbitMQ
--                    (r) or Kafka (k) side was announced already (ack_outbox.lua).
--   9 rate     hash  10-second bucket -> users admitted in it, and
--                    's<unix second>' -> users admitted in that second (the
--                    rate cap's sliding minute, cap_left)
--  10 state    hash  user -> state, for every user who is not waiting
--                    (a waiting user is a member of waiting instead)
--  11 useq     hash  user -> join sequence of the user's current entry,
--                    for users not waiting and pre-queued users (a waiting
--                    user's sequence is its score in waiting)
--  12 useat    hash  user -> seats held or bought, ids joined by ',' in the
--                    order selected (one seat: just its id; seat ids never hold ',')
--  13 upay     hash  user -> payment id
--  14 ugrace   hash  user -> '1' once the payment grace period was given
--  15 pays     hash  payment id -> 'user|seq|seats|status|at_ms', every payment
--                    id ever issued for the event (never deleted), status
--                    'pending' | 'completed' | 'failed' | 'refund'; at_ms is
--                    when the status was reached
--  16 status   string one byte per seat in seatmap order: 'a' available,
--                    'h' held, 's' sold (the seat map's plain-GET read model)
--  17 seatidx  hash  seat_id -> 0-based position in seatmap (for SETRANGE),
--                    explicit seat maps only (a grid's is computed)
--
-- Scripts that check the abuse limits (limited, limits_wait; below) take
-- one more key per limit after their event keys,
-- KEYS[NKEYS + 1], ... (a batch: each distinct key once): strings under
-- the same hash tag, '<prefix>:{<event_id>}:rl:<subject>' (booking.Limit).
--
-- Each script's header names the keys of these it reads and writes
-- (derived from the code by lua/keys_test.go, which fails when they
-- differ): that list is what the function is given, so it must be right.
-- Time is never read from Redis: every script takes now (unix ms) in ARGV.
-- Replies are arrays whose first element is 'ok' or an error code.
--
-- Redis runs these scripts as the functions of one library (lua/lua.go,
-- FUNCTION LOAD): this file once, then each script's file as the body of
-- a function. KEYS, ARGV, NKEYS (the number of event keys in KEYS) and
-- the K_* names below are the library's, set at the start of every call
-- by the function's registration (lua/lua.go; a key the function was not
-- given is nil); a call runs alone, so they are the call's own until it
-- returns.
local KEYS, ARGV, NKEYS
local K_CONFIG, K_SEATS, K_SEATMAP, K_WAITING, K_ACTIVE, K_SEQ, K_SEEN, K_OUTBOX
local K_RATE, K_STATE, K_USEQ, K_USEAT, K_UPAY, K_UGRACE, K_PAYS, K_STATUS, K_SEATIDX

local RATE_BUCKET_MS = 10000

local function num(v)
  return tonumber(v) or 0
end

-- int(n): an integral number as the decimal integer Go parses
-- (strconv.ParseInt): THE way a number becomes text in these scripts.
-- Lua's own conversion (.., tostring) prints %.14g: exponent form above
-- 10^14 and digits lost past 14 (a rebuilt event's join sequences start
-- near 1.8e15, pkg/ledger SeqBaseFactor), so a number is never joined
-- with .. or given to tostring except through int (lua/numbers_test.go
-- fails on any). A number passed whole to redis.call is written by Redis
-- with %.17g, exact for every integer below 2^53, but costs about twice
-- what int does (docs/benchmarks.md "Number formatting in Lua"): hot
-- paths pass int(n), made once and reused.
-- Exact for |n| <= 2^53, which every count, sequence and unix ms is
-- (restore_event's caller keeps sequence bases below 2^53 - 2^32).
-- '%d' formats a C long: exact and cheap where long has 64 bits (every
-- 64-bit build); a 32-bit build's long would wrap above 2^31, so there
-- '%.0f' (exact for integral doubles, slower) is used instead, chosen at
-- the first call (the library's load may not use string).
local INT_FORMAT
local function int(n)
  if not INT_FORMAT then
    INT_FORMAT = '%d'
    if string.format('%d', 9007199254740992) ~= '9007199254740992' then INT_FORMAT = '%.0f' end
  end
  return string.format(INT_FORMAT, n)
end

-- Writes the seat ids ARGV[first..last] as the event's seat map: each seat
-- available in seats, the display order in seatmap, and for an explicit
-- map (ARGV[10], per_row, is 0; a grid's index is computed) each id's
-- 0-based position in seatidx (seat_index, seat_price). In chunks:
-- unpack() has a stack limit.
local function write_seatmap(first, last)
  local CHUNK = 500
  for i = first, last, CHUNK do
    local stop = math.min(i + CHUNK - 1, last)
    local pairs_ = {}
    for j = i, stop do
      pairs_[#pairs_ + 1] = ARGV[j]
      pairs_[#pairs_ + 1] = ''
    end
    redis.call('HSET', K_SEATS, unpack(pairs_))
    redis.call('RPUSH', K_SEATMAP, unpack(ARGV, i, stop))
    if tonumber(ARGV[10]) == 0 then
      local idx = {}
      for j = i, stop do
        idx[#idx + 1] = ARGV[j]
        idx[#idx + 1] = j - first
      end
      redis.call('HSET', K_SEATIDX, unpack(idx))
    end
  end
end
-- A user's state: the state field, else 'waiting' for a member of the
-- queue, else nil (never joined).
local function user_state(user)
  local state = redis.call('HGET', K_STATE, user)
  if state then return state end
  if redis.call('ZSCORE', K_WAITING, user) then return 'waiting' end
  return nil
end

-- A user's join sequence (0 when never joined): a waiting user's score,
-- else (not waiting, or pre-queued with a draw key for a score) useq.
local function user_seq(user)
  local score = tonumber(redis.call('ZSCORE', K_WAITING, user))
  if score and score >= 1 then return score end
  return num(redis.call('HGET', K_USEQ, user))
end

-- A seat's position in the seat map: computed from the id for a grid
-- (rows x per_row, ids A1…, B1…, AA1…: bijective base 26), looked up in
-- seatidx for an explicit map. nil when unknown.
local function seat_index(seat)
  local per_row = num(redis.call('HGET', K_CONFIG, 'per_row'))
  if per_row == 0 then
    local i = redis.call('HGET', K_SEATIDX, seat)
    return i and tonumber(i)
  end
  local letters, n = string.match(seat, '^([A-Z]+)(%d+)$')
  if not letters then return nil end
  local row = 0
  for k = 1, #letters do row = row * 26 + (string.byte(letters, k) - 64) end
  return (row - 1) * per_row + tonumber(n) - 1
end

-- Every change of a seat's value in K_SEATS calls this with the new status
-- ('a', 'h' or 's') so the status string stays the seats hash's mirror.
-- On an event created before the string existed the write may leave a
-- string with holes ('\0'); its next read rebuilds it whole from the
-- seats hash (seat_status.lua).
local function set_seat_status(seat, code)
  local i = seat_index(seat)
  if i then redis.call('SETRANGE', K_STATUS, i, code) end
end

-- Room capacity right now: the configured size, but never more than the
-- seats not yet sold (admitting more users than seats only makes them wait
-- inside the room instead of outside).
local function room_capacity(capacity, total, sold)
  local left = total - sold
  if left < capacity then return left end
  return capacity
end

-- The seat ids of a ','-joined list ('' gives none).
local function split_seats(csv)
  local out = {}
  if not csv then return out end
  for id in string.gmatch(csv, '[^,]+') do out[#out + 1] = id end
  return out
end

-- A seat's price in cents: the price of the section (config 'prices') its
-- position falls in; 0 when the event has no prices (made before sections).
local function seat_price(seat)
  local prices = redis.call('HGET', K_CONFIG, 'prices')
  if not prices then return 0 end
  -- (an explicit map whose index is being rebuilt: find it in the list)
  local i = seat_index(seat) or redis.call('LPOS', K_SEATMAP, seat)
  if not i then return 0 end
  local start = 0
  for len, cents in string.gmatch(prices, '(%d+):(%d+)') do
    start = start + tonumber(len)
    if i < start then return tonumber(cents) end
  end
  return 0
end

-- Each seat's price, joined by ',' in the order of the seats.
local function seat_prices(csv)
  local out = {}
  for _, seat in ipairs(split_seats(csv)) do out[#out + 1] = seat_price(seat) end
  return table.concat(out, ',')
end

-- The amount of an order: the sum of its seats' prices.
local function order_amount(csv)
  local sum = 0
  for _, seat in ipairs(split_seats(csv)) do sum = sum + seat_price(seat) end
  return sum
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
        redis.call('HSET', K_SEATS, id, '')
        set_seat_status(id, 'a')
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

-- Live holds that count against the room's capacity at now: holds whose
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

-- A payment id's record (K_PAYS) as a table {user, seq, seat, status, at},
-- or nil when the id was never issued for user's event. A payment started
-- before the registry existed is read from its user's current hold.
local function payment_record(user, pid)
  local v = redis.call('HGET', K_PAYS, pid)
  if v then
    local u, seq, seat, status, at = string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
    local n = num(seq)
    if seq and string.find(seq, '[^%d]') and u == user and redis.call('HGET', K_UPAY, user) == pid then
      -- an earlier version wrote the sequence in exponent form (its
      -- digits past 14 lost, int): the user's hold is still this
      -- payment's, so its sequence is the user's (the next set_payment
      -- writes it whole)
      n = user_seq(user)
    end
    return {user = u, seq = n, seat = seat, status = status, at = num(at)}
  end
  if redis.call('HGET', K_UPAY, user) ~= pid then return nil end
  local state, status = user_state(user), 'pending'
  if state == 'completed' or state == 'failed' then status = state end
  return {user = user, seq = user_seq(user),
    seat = redis.call('HGET', K_USEAT, user) or '', status = status, at = 0}
end

-- The payment record of pid for user (payment_record), or nil and the
-- reply for a webhook that names none of this user's payments:
-- {'not_found'} when the user never joined, {'payment_mismatch'} when the
-- id is not theirs.
local function user_payment(user, pid)
  local p = payment_record(user, pid)
  if not p then
    if not user_state(user) then return nil, {'not_found'} end
    return nil, {'payment_mismatch'}
  end
  if p.user ~= user then return nil, {'payment_mismatch'} end
  return p
end

-- Record a payment id's new status (and when it was reached).
local function set_payment(pid, p, status, now)
  p.status, p.at = status, num(now)
  redis.call('HSET', K_PAYS, pid, p.user .. '|' .. int(p.seq) .. '|' .. p.seat .. '|' .. status .. '|' .. now)
end

-- Run a variadic command over a long argument list in chunks (Lua's
-- unpack() is limited by the C stack; 1000 is well inside it): args[1..n],
-- n defaulting to #args.
local function bulk(cmd, key, args, n)
  n = n or #args
  for i = 1, n, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, n)))
  end
end

-- Let users into the room: users[i], whose join sequence is seqs[i], no
-- longer in waiting. Each gets the same deadline, state active, its
-- sequence in useq, and an outbox entry so the side effects
-- (timeout message, notification, Kafka event) are announced even if the
-- caller dies before doing it; the served counter and the rate bucket move
-- once for the batch. One command per structure, not per user: this is the
-- hot loop of promotion. (A user's seat, payment and grace fields are
-- already clear: a new join clears what a previous hold left.)
local function admit_all(users, seqs, now, hold_ms)
  local deadline = now + hold_ms
  -- numbers are written as strings made once (int), not converted per use
  local d, tail = int(deadline), '||' .. int(now)
  local zadd, states, useq, outbox, max_seq = {}, {}, {}, {}, 0
  for i = 1, #users do
    local user, seq = users[i], seqs[i]
    local s = int(seq)
    zadd[#zadd + 1] = d
    zadd[#zadd + 1] = user
    states[#states + 1] = user
    states[#states + 1] = 'active'
    useq[#useq + 1] = user
    useq[#useq + 1] = s
    outbox[#outbox + 1] = 'p:' .. s .. ':' .. user
    outbox[#outbox + 1] = s .. '|' .. d .. tail
    if seq > max_seq then max_seq = seq end
  end
  if #zadd == 0 then return deadline end
  bulk('ZADD', K_ACTIVE, zadd)
  bulk('HSET', K_STATE, states)
  bulk('HSET', K_USEQ, useq)
  bulk('HSET', K_OUTBOX, outbox)
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
-- alone, like KEYS), in tables made once and reused: a table costs
-- Redis's Lua about 0.13 µs to make, a closure 0.1, which a join paid a
-- dozen times over (docs/benchmarks.md "Joins and reads in batches").
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

-- The batched join and read (enqueue_joins, read_positions) run one call's
-- requests in order, each as if it were a call of its own in that order,
-- reading what they share once and writing what they defer once. A
-- request's values are read from ARGV where the calling script put them
-- (reqs_at): request i's start at ARGV[R_FIRST + (i - 1) * R_STRIDE] with
-- the user id, then now_ms, then (joins) own, then, when R_KEYED, the
-- number (from 1, among the keys after the event's) of its key per limit
-- slot; without R_KEYED slot s's key is the s-th after the event's.
local R_N, R_FIRST, R_STRIDE, R_KEYED, R_HEAD
local R_USERS, R_SCORE, R_STATE = {}, {}, {} -- per request: user, waiting score (false: none), state (nil: none)

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

-- Request i's now, as given and as a number, and the ms until its limits
-- allow it (0: now).
local function req_now(i)
  local at = R_FIRST + (i - 1) * R_STRIDE
  local now_s = ARGV[at + 1]
  local now = tonumber(now_s)
  if L_M == 0 then return now_s, now, 0 end
  if R_KEYED then return now_s, now, limits_wait(now, at + R_HEAD - 1) end
  return now_s, now, limits_wait(now)
end

-- enqueue_joins's deferred writes: waiting and presence entries (score,
-- member pairs), outbox fields (field, value pairs) and pre-queued users'
-- sequences (user, sequence pairs), J_NW, J_NS, J_NO, J_NU values of
-- each; J_EARLY: a pending waiting entry is pre-queued (ranks before
-- existing ones). J_SEQ: the last sequence handed out (nil: the counter
-- not read yet), J_SEQ0 the counter as read; J_QUEUED: waiting's size
-- with the pending entries (nil: not counted yet). J_TOUCHED: users this
-- call joined already (emptied at its end).
local J_WAIT, J_SEEN, J_OUT, J_USEQ, J_TOUCHED = {}, {}, {}, {}, {}
local J_NW, J_NS, J_NO, J_NU, J_EARLY, J_SEQ, J_SEQ0, J_QUEUED
local J_C, J_TOTAL, J_START, J_END, J_CAPACITY, J_SOLD, J_PAUSED, J_HOLD, J_ABANDON

-- Writes the sequence counter when the batch handed out numbers since it
-- last did: before anything that uses them is written, so that no
-- failure in between can give a number out twice (a failure after it
-- leaves a gap, as a lone join's INCR does).
local function j_seq_write()
  if J_SEQ and J_SEQ ~= J_SEQ0 then
    redis.call('SET', K_SEQ, int(J_SEQ))
    J_SEQ0 = J_SEQ
  end
end

-- Writes what the batch deferred: the counter, then the join facts, then
-- the pre-queued users' sequences and their count, then the waiting
-- entries, then presence, in the order a lone join writes them, so that a
-- failure part way never leaves a waiting user whose booking_request is
-- not in the outbox, nor a pre-queued user that promotion's draw_pending
-- check (config prequeued > 0) does not count.
local function j_flush()
  j_seq_write()
  if J_NO == 2 then
    redis.call('HSET', K_OUTBOX, J_OUT[1], J_OUT[2])
  elseif J_NO > 0 then
    bulk('HSET', K_OUTBOX, J_OUT, J_NO)
  end
  if J_NU > 0 then
    bulk('HSET', K_USEQ, J_USEQ, J_NU)
    redis.call('HINCRBY', K_CONFIG, 'prequeued', J_NU / 2)
  end
  if J_NW == 2 then
    redis.call('ZADD', K_WAITING, J_WAIT[1], J_WAIT[2])
  elseif J_NW > 0 then
    bulk('ZADD', K_WAITING, J_WAIT, J_NW)
  end
  if J_NS > 0 then bulk('ZADD', K_SEEN, J_SEEN, J_NS) end
  J_NW, J_NS, J_NO, J_NU, J_EARLY = 0, 0, 0, 0, false
end

-- The next join sequence: INCR for a call of one join; a batch reads the
-- counter once and writes it before the numbers are used (j_seq_write).
local function j_next_seq()
  if R_N == 1 then return redis.call('INCR', K_SEQ) end
  if not J_SEQ then
    J_SEQ0 = num(redis.call('GET', K_SEQ))
    J_SEQ = J_SEQ0
  end
  J_SEQ = J_SEQ + 1
  return J_SEQ
end

local function j_waiting_count()
  if not J_QUEUED then J_QUEUED = redis.call('ZCARD', K_WAITING) + J_NW / 2 end
  return J_QUEUED
end

local function j_wait_as(score, user)
  J_WAIT[J_NW + 1], J_WAIT[J_NW + 2] = score, user
  J_NW = J_NW + 2
  if J_QUEUED then J_QUEUED = J_QUEUED + 1 end
end

local function j_present(now_s, user)
  if J_ABANDON > 0 then
    J_SEEN[J_NS + 1], J_SEEN[J_NS + 2] = now_s, user
    J_NS = J_NS + 2
  end
end

-- One join: request i, user at now (now_s as given). enqueue.lua's header
-- says what it does and answers.
local function j_join(i, user, now, now_s)
  local score, state
  if J_TOUCHED[user] then
    -- joined earlier in this call: read what that join wrote
    j_flush()
    score = redis.call('ZSCORE', K_WAITING, user)
    if not score then state = redis.call('HGET', K_STATE, user) end
  else
    score, state = R_SCORE[i], R_STATE[i]
  end
  if R_N > 1 then J_TOUCHED[user] = true end
  if score then state = 'waiting' end
  if state == 'waiting' then
    -- (a state field 'waiting': an entry written before waiting users lost it)
    local s = tonumber(score or redis.call('ZSCORE', K_WAITING, user)) or 0
    if s < 1 then s = num(redis.call('HGET', K_USEQ, user)) end
    j_present(now_s, user)
    if now < J_START then return {'ok', state, s, 0, 0, 0, J_START} end
    -- a pending pre-queued entry may rank before this user; a pending
    -- queued one never does (its sequence is larger)
    if J_EARLY then j_flush() end
    return {'ok', state, s, redis.call('ZRANK', K_WAITING, user) + 1, 0, 0}
  end
  if state == 'active' or state == 'seat_selected' or state == 'payment_pending' or state == 'completed' then
    return {'ok', state, num(redis.call('HGET', K_USEQ, user)), 0, num(redis.call('ZSCORE', K_ACTIVE, user)), 0}
  end

  local early = false
  if now < J_START then
    local early_ms, seed = num(J_C[10]), J_C[11]
    if early_ms <= 0 or not seed or seed == '' or now < J_START - early_ms then
      return {'sales_not_started'}
    end
    early = true
  end
  if J_END > 0 and now > J_END then return {'sales_ended'} end
  if J_SOLD >= J_TOTAL then return {'sold_out'} end

  local seq = j_next_seq()
  local s = int(seq)
  J_OUT[J_NO + 1], J_OUT[J_NO + 2] = 'j:' .. s, s .. '|' .. user .. '||' .. now_s
  J_NO = J_NO + 2
  if state then
    -- joining again after a finished hold: forget the old hold's details
    -- (a waiting user has no state or useq field)
    redis.call('HDEL', K_STATE, user)
    redis.call('HDEL', K_USEQ, user)
    redis.call('HDEL', K_USEAT, user)
    redis.call('HDEL', K_UPAY, user)
    redis.call('HDEL', K_UGRACE, user)
  end

  if early then
    local h = tonumber(string.sub(redis.sha1hex(J_C[11] .. ':' .. user), 1, 13), 16)
    j_wait_as(int(h - 9007199254740992), user)
    J_EARLY = true
    -- the score is the draw key, so the sequence is kept beside it
    J_USEQ[J_NU + 1], J_USEQ[J_NU + 2] = user, s
    J_NU = J_NU + 2
    j_present(now_s, user)
    return {'ok', 'waiting', seq, 0, 0, 1, J_START}
  end

  -- Admit at once when nobody is waiting and the room has a free slot. It
  -- counts what promotion counts: every hold when the room is not full, else
  -- (holds_counted) the live holds plus overdue payment_pending holds
  -- that will get their grace; other overdue holds are reclaimed by the next
  -- promotion. Undecided (many overdue holds): the user waits for promotion.
  local q = j_waiting_count()
  if J_PAUSED ~= '1' and q == 0 then
    local room = room_capacity(J_CAPACITY, J_TOTAL, J_SOLD)
    local admit = redis.call('ZCARD', K_ACTIVE) < room
    if not admit and room > 0 then
      local held = holds_counted(now, 64)
      admit = held ~= nil and held < room
    end
    local cap = num(J_C[9])
    if admit and cap > 0 then
      -- the rate cap (admit_per_minute) counts immediate admissions too
      admit = cap_left(now, cap) > 0
    end
    if admit then
      j_seq_write()
      local deadline = admit_all({user}, {seq}, now, J_HOLD)
      return {'ok', 'active', seq, 0, deadline, 1}
    end
  end

  j_wait_as(s, user)
  j_present(now_s, user)
  -- the new sequence is the largest, so the user is last in line
  return {'ok', 'waiting', seq, q + 1, 0, 1}
end

-- enqueue_joins runs the joins reqs_at placed (enqueue.lua's header says
-- what one does and answers) and returns their replies in a list. Whatever
-- their number, it reads the event's config once, the users' waiting
-- scores and states once (reqs_read) and each limit key once, and writes
-- the new waiting entries, outbox entries, presence entries and
-- pre-queued users' sequences (and their count) with one command each and
-- each counted limit key once, after the joins, and the
-- sequence counter (a batch) before any write that uses its numbers
-- (j_seq_write): the per-join work of the common case (a
-- new user queued behind others) is then Lua alone (enqueue_batch.lua;
-- docs/booking-engine.md "Joins and reads in batches"). Deferring writes
-- changes no answer: a user who joins twice in one call finds the writes
-- of the first made before the second looks (j_flush), a new waiting
-- entry always ranks after every existing one (its sequence is the
-- largest), and the size of waiting counts the entries not yet written.
-- The join that places a user (created = 1) does not count against the
-- user's own limit (own, the slot) when its key does not exist.
local function enqueue_joins()
  local replies = {}
  J_C = redis.call('HMGET', K_CONFIG, 'total', 'sales_start_ms', 'sales_end_ms',
    'capacity', 'sold', 'paused', 'hold_ms', 'abandon_ms', 'admit_per_minute', 'early_join_ms', 'draw_seed')
  if not J_C[1] then
    for i = 1, R_N do replies[i] = {'event_not_found'} end
    return replies
  end
  J_TOTAL, J_START, J_END, J_CAPACITY, J_SOLD, J_PAUSED, J_HOLD, J_ABANDON =
    num(J_C[1]), num(J_C[2]), num(J_C[3]), num(J_C[4]), num(J_C[5]), J_C[6], num(J_C[7]), num(J_C[8])
  J_NW, J_NS, J_NO, J_NU, J_EARLY, J_SEQ, J_SEQ0, J_QUEUED = 0, 0, 0, 0, false, nil, nil, nil
  reqs_read()

  for i = 1, R_N do
    local now_s, now, wait = req_now(i)
    if wait > 0 then
      replies[i] = {'rate_limited', wait}
    else
      local r = j_join(i, R_USERS[i], now, now_s)
      replies[i] = r
      if L_M > 0 then
        local spare = 0
        if r[6] == 1 then spare = num(ARGV[R_FIRST + (i - 1) * R_STRIDE + 2]) end
        limits_take(now, spare)
      end
    end
  end

  j_flush()
  if L_M > 0 then limits_write() end
  if R_N > 1 then
    for i = 1, R_N do J_TOUCHED[R_USERS[i]] = nil end
  end
  return replies
end

-- read_positions answers the position reads reqs_at placed
-- (get_position.lua's header says what one does and answers) and returns
-- their replies in a list. It reads the event's config, waiting's size,
-- the users' waiting scores and states and each limit key once, and writes
-- the presence entries and each counted limit key once
-- (get_position_batch.lua); a read changes nothing another read looks at.
local function read_positions()
  local replies = {}
  local c = redis.call('HMGET', K_CONFIG, 'total', 'sold', 'served', 'abandon_ms', 'admit_per_minute', 'sales_start_ms')
  if not c[1] then
    for i = 1, R_N do replies[i] = {'event_not_found'} end
    return replies
  end
  reqs_read()
  local sold_out = 0
  if num(c[2]) >= num(c[1]) then sold_out = 1 end
  local served, abandon, cap, start_ms = num(c[3]), num(c[4]), num(c[5]), num(c[6])
  local waiting, rate_b, rate, nseen, seen

  for i = 1, R_N do
    local user = R_USERS[i]
    local now_s, now, wait = req_now(i)
    if wait > 0 then
      replies[i] = {'rate_limited', wait}
    else
      if L_M > 0 then limits_take(now, 0) end
      if not waiting then waiting = redis.call('ZCARD', K_WAITING) end
      local b = math.floor(now / RATE_BUCKET_MS)
      if b ~= rate_b then rate_b, rate = b, admitted_last_minute(now) end
      -- a waiting user is only a member of waiting (lib.lua): score = sequence
      local score = tonumber(R_SCORE[i])
      if not score then
        local state = R_STATE[i]
        -- (a state field 'waiting' without a waiting entry: none to report)
        if not state or state == 'waiting' then
          replies[i] = {'not_found', sold_out, served, waiting, rate, cap, start_ms}
        else
          replies[i] = {'ok', state, num(redis.call('HGET', K_USEQ, user)), 0, redis.call('HGET', K_USEAT, user) or '',
            redis.call('HGET', K_UPAY, user) or '', num(redis.call('ZSCORE', K_ACTIVE, user)), sold_out, served,
            waiting, rate, cap, start_ms}
        end
      else
        if score < 1 then score = num(redis.call('HGET', K_USEQ, user)) end -- pre-queued: a draw key
        local position = 0
        if now >= start_ms then position = redis.call('ZRANK', K_WAITING, user) + 1 end
        if abandon > 0 then
          if not seen then seen, nseen = {}, 0 end
          seen[nseen + 1], seen[nseen + 2] = now_s, user
          nseen = nseen + 2
        end
        replies[i] = {'ok', 'waiting', score, position, '', '', 0, sold_out, served, waiting, rate, cap, start_ms}
      end
    end
  end

  if seen then bulk('ZADD', K_SEEN, seen, nseen) end
  if L_M > 0 then limits_write() end
  return replies
end
