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
-- Scripts that check the abuse limits (limited, below) take one more key
-- per limit after their event keys, KEYS[NKEYS + 1], ...: strings under
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

-- int(n): an integral number as a decimal string. A number handed to
-- redis.call or joined with .. is converted by printf's %.17g / %.14g,
-- which costs about 0.4-0.5 µs per number in Redis 7.0 (several a join);
-- %d costs half that (docs/benchmarks.md "Number formatting in Lua").
-- Exact for |n| < 2^53, which every count, sequence and unix ms is.
local function int(n)
  return string.format('%d', n)
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
-- Returns 'extended', new_deadline or 'released', seat.
local function expire_due(user, deadline, now)
  local extended = grace_deadline(user, deadline, now, num(redis.call('HGET', K_CONFIG, 'grace_ms')))
  if extended then
    redis.call('HSET', K_UGRACE, user, '1')
    redis.call('ZADD', K_ACTIVE, extended, user)
    return 'extended', extended
  end
  return 'released', release_hold(user, 'expired')
end

-- Live holds that count against the room's capacity at now: holds whose
-- deadline has not passed, plus overdue payment_pending holds that the next
-- promotion will extend by the grace period instead of releasing (promotion
-- counts those, so immediate admission must too). Looks at no more than
-- limit overdue holds: returns nil when more are overdue (undecided).
local function holds_counted(now, limit)
  local live = redis.call('ZCOUNT', K_ACTIVE, '(' .. now, '+inf')
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
    return {user = u, seq = num(seq), seat = seat, status = status, at = num(at)}
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
  redis.call('HSET', K_PAYS, pid, p.user .. '|' .. p.seq .. '|' .. p.seat .. '|' .. status .. '|' .. now)
end

-- Run a variadic command over a long argument list in chunks (Lua's
-- unpack() is limited by the C stack; 1000 is well inside it).
local function bulk(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
  end
end

-- Let users into the room. list is {user, seq, user, seq, ...}, users who
-- are no longer in waiting. Each gets the same deadline, state active, its
-- sequence in useq, and an outbox entry so the side effects
-- (timeout message, notification, Kafka event) are announced even if the
-- caller dies before doing it; the served counter and the rate bucket move
-- once for the batch. One command per structure, not per user: this is the
-- hot loop of promotion. (A user's seat, payment and grace fields are
-- already clear: a new join clears what a previous hold left.)
local function admit_all(list, now, hold_ms)
  local deadline = now + hold_ms
  -- numbers are written as strings made once (int), not converted per use
  local d, tail = int(deadline), '||' .. int(now)
  local zadd, states, seqs, outbox, max_seq = {}, {}, {}, {}, 0
  for i = 1, #list, 2 do
    local user, seq = list[i], list[i + 1]
    local s = int(seq)
    zadd[#zadd + 1] = d
    zadd[#zadd + 1] = user
    states[#states + 1] = user
    states[#states + 1] = 'active'
    seqs[#seqs + 1] = user
    seqs[#seqs + 1] = s
    outbox[#outbox + 1] = 'p:' .. s .. ':' .. user
    outbox[#outbox + 1] = s .. '|' .. d .. tail
    if seq > max_seq then max_seq = seq end
  end
  if #zadd == 0 then return deadline end
  bulk('ZADD', K_ACTIVE, zadd)
  bulk('HSET', K_STATE, states)
  bulk('HSET', K_USEQ, seqs)
  bulk('HSET', K_OUTBOX, outbox)
  if max_seq > num(redis.call('HGET', K_CONFIG, 'served')) then
    redis.call('HSET', K_CONFIG, 'served', max_seq)
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
-- is GCRA over one key after the event's (KEYS[NKEYS + 1..]): the key holds the theoretical arrival
-- time (unix ms, fractional) of the next request, and from ARGV[first] on,
-- two values per limit: the emission interval (ms between requests at the
-- sustained rate: period / rate) and the burst (requests that may arrive at
-- once, the rate). A request is allowed when every limit allows it; then
-- each key moves one interval ahead and expires when its bucket would be
-- full again.
-- limits_check reads the keys and returns the ms until the most limiting
-- one would allow the request (0: allowed; no limits, no keys after the
-- event's: 0, nothing read), and the keys' values as read and their new
-- times;
-- limits_count then writes the new times (the request is counted), except
-- for limit number spare when its key did not exist (0: none; enqueue's
-- placing join, which does not count against the user's own limit). The
-- times are passed to SET as numbers (Redis writes them with 17
-- significant digits): no string.format, no rounding.
local function limits_check(first, now)
  local n = #KEYS - NKEYS
  if n <= 0 then return 0 end
  local cur, tats, wait = redis.call('MGET', unpack(KEYS, NKEYS + 1, NKEYS + n)), {}, 0
  for i = 1, n do
    local step, burst = tonumber(ARGV[first + 2 * i - 2]), tonumber(ARGV[first + 2 * i - 1])
    local tat = math.max(tonumber(cur[i]) or now, now) + step
    local allow_at = tat - burst * step
    if now < allow_at then wait = math.max(wait, allow_at - now) end
    tats[i] = tat
  end
  return math.ceil(wait), cur, tats
end

local function limits_count(cur, tats, now, spare)
  if not tats then return end
  for i = 1, #tats do
    if i ~= spare or cur[i] then
      redis.call('SET', KEYS[NKEYS + i], tats[i], 'PX', int(math.max(1, math.ceil(tats[i] - now))))
    end
  end
end

-- limited checks the limits and, when they allow, counts the request:
-- returns 0 when allowed, else the ms until the most limiting key would
-- allow it (no key changed).
local function limited(first, now)
  local wait, cur, tats = limits_check(first, now)
  if wait > 0 then return wait end
  limits_count(cur, tats, now, 0)
  return 0
end

-- enqueue_joins runs joins (enqueue.lua's header says what one does) in
-- order, each as if it were a call of its own in that order, and returns
-- their replies in a list. joins[i] = {user, now (number), now_s (now as
-- given, written as is), own, keys}: keys[s] is the number, from 1 among
-- the keys after the event's, of the join's key for limit slot s, whose
-- interval and burst are steps[s] and bursts[s]; own is the slot of the
-- user's own limit (0: none; not counted for the join that places the
-- user when its key does not exist, enqueue.lua).
-- One join or many, a call reads the event's config once, the joining
-- users' waiting scores (ZMSCORE) and states (HMGET) once, each limit
-- key once (MGET), and writes the new waiting entries, outbox entries,
-- presence entries, the sequence counter and each counted limit key
-- once, after the joins: the per-join work of the common case (a new
-- user queued behind others) is then Lua alone (enqueue_batch.lua;
-- docs/booking-engine.md "Joins in batches"). The deferred writes are
-- invisible to the joins after them only where that cannot change an
-- answer: a user who joins twice in one call finds the writes of the
-- first made before the second looks (flush), a new waiting entry always
-- ranks after every existing one (its sequence is the largest), and the
-- size of waiting is counted with the entries not yet written.
local function enqueue_joins(joins, steps, bursts)
  local replies, n = {}, #joins
  local c = redis.call('HMGET', K_CONFIG, 'total', 'sales_start_ms', 'sales_end_ms',
    'capacity', 'sold', 'paused', 'hold_ms', 'abandon_ms', 'admit_per_minute', 'early_join_ms', 'draw_seed')
  if not c[1] then
    for i = 1, n do replies[i] = {'event_not_found'} end
    return replies
  end
  local total, start_ms, end_ms, capacity, sold, paused, hold_ms, abandon_ms =
    num(c[1]), num(c[2]), num(c[3]), num(c[4]), num(c[5]), c[6], num(c[7]), num(c[8])

  -- each limit key's time (nil: no key) and the now of its last count
  local nlim, tat, counted = #KEYS - NKEYS, {}, {}
  if nlim > 0 and #steps > 0 then
    local cur = redis.call('MGET', unpack(KEYS, NKEYS + 1, NKEYS + nlim))
    for k = 1, nlim do tat[k] = tonumber(cur[k]) end
  end

  -- the users' waiting scores and (for those not waiting) states, read at once
  local users = {}
  for i = 1, n do users[i] = joins[i].user end
  local scores = {}
  for i = 1, n, 1000 do
    local part = redis.call('ZMSCORE', K_WAITING, unpack(users, i, math.min(i + 999, n)))
    for j = 1, #part do scores[i + j - 1] = part[j] end
  end
  local states, ask = {}, {}
  for i = 1, n do
    if not scores[i] then ask[#ask + 1] = i end
  end
  for a = 1, #ask, 1000 do
    local fields = {}
    for b = a, math.min(a + 999, #ask) do fields[#fields + 1] = users[ask[b]] end
    local part = redis.call('HMGET', K_STATE, unpack(fields))
    for b = 1, #part do states[ask[a + b - 1]] = part[b] end
  end

  -- writes deferred to flush: waiting and presence entries (score,
  -- member, ...), outbox fields (field, value, ...)
  local pwait, pseen, pout, early_pending = {}, {}, {}, false
  local touched = {} -- users this call has joined already
  local seq, seq0    -- the sequence counter, read when first needed
  local queued       -- waiting's size with the pending entries (nil: not read)
  local function flush()
    if #pwait > 0 then bulk('ZADD', K_WAITING, pwait); pwait = {} end
    if #pseen > 0 then bulk('ZADD', K_SEEN, pseen); pseen = {} end
    if #pout > 0 then bulk('HSET', K_OUTBOX, pout); pout = {} end
    early_pending = false
  end
  local function next_seq()
    if not seq then
      seq0 = num(redis.call('GET', K_SEQ))
      seq = seq0
    end
    seq = seq + 1
    return seq
  end
  local function waiting_count()
    if not queued then queued = redis.call('ZCARD', K_WAITING) + #pwait / 2 end
    return queued
  end
  local function wait_as(score, user)
    pwait[#pwait + 1] = score
    pwait[#pwait + 1] = user
    if queued then queued = queued + 1 end
  end
  local function present(now_s, user)
    if abandon_ms > 0 then
      pseen[#pseen + 1] = now_s
      pseen[#pseen + 1] = user
    end
  end

  local function join(i, user, now, now_s)
    local score, state
    if touched[user] then
      -- joined earlier in this call: read what that join wrote
      flush()
      score = redis.call('ZSCORE', K_WAITING, user)
      if not score then state = redis.call('HGET', K_STATE, user) end
    else
      score, state = scores[i], states[i]
    end
    touched[user] = true
    if score then state = 'waiting' end
    if state == 'waiting' then
      -- (a state field 'waiting': an entry written before waiting users lost it)
      local s = tonumber(score or redis.call('ZSCORE', K_WAITING, user)) or 0
      if s < 1 then s = num(redis.call('HGET', K_USEQ, user)) end
      present(now_s, user)
      if now < start_ms then return {'ok', state, s, 0, 0, 0, start_ms} end
      -- a pending pre-queued entry may rank before this user; a pending
      -- queued one never does
      if early_pending then flush() end
      return {'ok', state, s, redis.call('ZRANK', K_WAITING, user) + 1, 0, 0}
    end
    if state == 'active' or state == 'seat_selected' or state == 'payment_pending' or state == 'completed' then
      return {'ok', state, num(redis.call('HGET', K_USEQ, user)), 0, num(redis.call('ZSCORE', K_ACTIVE, user)), 0}
    end

    local early = false
    if now < start_ms then
      local early_ms, seed = num(c[10]), c[11]
      if early_ms <= 0 or not seed or seed == '' or now < start_ms - early_ms then
        return {'sales_not_started'}
      end
      early = true
    end
    if end_ms > 0 and now > end_ms then return {'sales_ended'} end
    if sold >= total then return {'sold_out'} end

    local seqn = next_seq()
    local s = int(seqn)
    pout[#pout + 1] = 'j:' .. s
    pout[#pout + 1] = s .. '|' .. user .. '||' .. now_s
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
      local h = tonumber(string.sub(redis.sha1hex(c[11] .. ':' .. user), 1, 13), 16)
      wait_as(string.format('%.0f', h - 9007199254740992), user)
      early_pending = true
      -- the score is the draw key, so the sequence is kept beside it
      redis.call('HSET', K_USEQ, user, s)
      redis.call('HINCRBY', K_CONFIG, 'prequeued', 1)
      present(now_s, user)
      return {'ok', 'waiting', seqn, 0, 0, 1, start_ms}
    end

    -- Admit at once when nobody is waiting and the room has a free slot. It
    -- counts what promotion counts: every hold when the room is not full, else
    -- (holds_counted) the live holds plus overdue payment_pending holds
    -- that will get their grace; other overdue holds are reclaimed by the next
    -- promotion. Undecided (many overdue holds): the user waits for promotion.
    local q = waiting_count()
    if paused ~= '1' and q == 0 then
      local room = room_capacity(capacity, total, sold)
      local admit = redis.call('ZCARD', K_ACTIVE) < room
      if not admit and room > 0 then
        local held = holds_counted(now, 64)
        admit = held ~= nil and held < room
      end
      if admit and num(c[9]) > 0 then
        -- the rate cap (admit_per_minute) counts immediate admissions too
        admit = cap_left(now, num(c[9])) > 0
      end
      if admit then
        local deadline = admit_all({user, seqn}, now, hold_ms)
        return {'ok', 'active', seqn, 0, deadline, 1}
      end
    end

    wait_as(s, user)
    present(now_s, user)
    -- the new sequence is the largest, so the user is last in line
    return {'ok', 'waiting', seqn, q + 1, 0, 1}
  end

  for i = 1, n do
    local j = joins[i]
    local now, keys, wait, new = j.now, j.keys, 0, {}
    for s = 1, #steps do
      local t = math.max(tat[keys[s]] or now, now) + steps[s]
      local allow_at = t - bursts[s] * steps[s]
      if now < allow_at then wait = math.max(wait, allow_at - now) end
      new[s] = t
    end
    if wait > 0 then
      replies[i] = {'rate_limited', math.ceil(wait)}
    else
      local r = join(i, j.user, now, j.now_s)
      replies[i] = r
      for s = 1, #steps do
        local k = keys[s]
        if s ~= j.own or r[6] ~= 1 or tat[k] then
          tat[k], counted[k] = new[s], now
        end
      end
    end
  end

  flush()
  if seq and seq ~= seq0 then redis.call('SET', K_SEQ, int(seq)) end
  for k, now in pairs(counted) do
    redis.call('SET', KEYS[NKEYS + k], tat[k], 'PX', int(math.max(1, math.ceil(tat[k] - now))))
  end
  return replies
end

-- read_positions answers position reads (get_position.lua's header says
-- what one does) in order, each as if it were a call of its own, and
-- returns their replies in a list. reqs[i] = {user, now (number), now_s
-- (as given), keys}: keys[s] is the number, from 1 among the keys after
-- the event's, of the read's key for limit slot s (interval steps[s],
-- burst bursts[s]). A call reads the event's config, waiting's size, the
-- users' waiting scores (ZMSCORE) and states (HMGET) and each limit key
-- once, and writes the presence entries and each counted limit key once
-- (get_position_batch.lua); a read changes nothing another read looks at.
local function read_positions(reqs, steps, bursts)
  local replies, n = {}, #reqs
  local c = redis.call('HMGET', K_CONFIG, 'total', 'sold', 'served', 'abandon_ms', 'admit_per_minute', 'sales_start_ms')
  if not c[1] then
    for i = 1, n do replies[i] = {'event_not_found'} end
    return replies
  end
  local nlim, tat, counted = #KEYS - NKEYS, {}, {}
  if nlim > 0 and #steps > 0 then
    local cur = redis.call('MGET', unpack(KEYS, NKEYS + 1, NKEYS + nlim))
    for k = 1, nlim do tat[k] = tonumber(cur[k]) end
  end
  local sold_out = 0
  if num(c[2]) >= num(c[1]) then sold_out = 1 end
  local served, cap, start_ms, waiting = num(c[3]), num(c[5]), num(c[6]), nil
  local rates = {} -- admitted_last_minute per 10-second bucket of now

  local users = {}
  for i = 1, n do users[i] = reqs[i].user end
  local scores, states, ask = {}, {}, {}
  for i = 1, n, 1000 do
    local part = redis.call('ZMSCORE', K_WAITING, unpack(users, i, math.min(i + 999, n)))
    for j = 1, #part do scores[i + j - 1] = tonumber(part[j]) end
  end
  for i = 1, n do
    if not scores[i] then ask[#ask + 1] = i end
  end
  for a = 1, #ask, 1000 do
    local fields = {}
    for b = a, math.min(a + 999, #ask) do fields[#fields + 1] = users[ask[b]] end
    local part = redis.call('HMGET', K_STATE, unpack(fields))
    for b = 1, #part do states[ask[a + b - 1]] = part[b] end
  end
  local pseen = {}

  for i = 1, n do
    local r, user, now, keys = reqs[i], users[i], reqs[i].now, reqs[i].keys
    local wait, new = 0, {}
    for s = 1, #steps do
      local t = math.max(tat[keys[s]] or now, now) + steps[s]
      local allow_at = t - bursts[s] * steps[s]
      if now < allow_at then wait = math.max(wait, allow_at - now) end
      new[s] = t
    end
    if wait > 0 then
      replies[i] = {'rate_limited', math.ceil(wait)}
    else
      for s = 1, #steps do tat[keys[s]], counted[keys[s]] = new[s], now end
      if not waiting then waiting = redis.call('ZCARD', K_WAITING) end
      local b = math.floor(now / RATE_BUCKET_MS)
      if not rates[b] then rates[b] = admitted_last_minute(now) end
      local rate = rates[b]
      -- a waiting user is only a member of waiting (lib.lua): score = sequence
      local score = scores[i]
      if not score then
        local state = states[i]
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
        if num(c[4]) > 0 then
          pseen[#pseen + 1] = r.now_s
          pseen[#pseen + 1] = user
        end
        replies[i] = {'ok', 'waiting', score, position, '', '', 0, sold_out, served, waiting, rate, cap, start_ms}
      end
    end
  end

  if #pseen > 0 then bulk('ZADD', K_SEEN, pseen) end
  for k, now in pairs(counted) do
    redis.call('SET', KEYS[NKEYS + k], tat[k], 'PX', int(math.max(1, math.ceil(tat[k] - now))))
  end
  return replies
end
