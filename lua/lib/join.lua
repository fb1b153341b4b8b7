-- join.lua: a call's joins (enqueue.lua, enqueue_batch.lua): enqueue_joins.

-- enqueue_joins's deferred writes: waiting and presence entries (score,
-- member pairs), outbox fields (field, value pairs) and pre-queued users'
-- sequences (user, sequence pairs), J_NW, J_NS, J_NO, J_NU values of
-- each; J_EARLY: a pending waiting entry is pre-queued (ranks before
-- existing ones). J_SEQ: the last sequence handed out (nil: the counter
-- not read yet), J_SEQ0 the counter as read; J_QUEUED: waiting's size
-- with the pending entries (nil: not counted yet). J_TOUCHED: users this
-- call joined already (emptied at its end). The tables are made once at
-- load and reused, like limits.lua's (same benchmarks).
local J_WAIT, J_SEEN, J_OUT, J_USEQ, J_TOUCHED = {}, {}, {}, {}, {}
local J_NW, J_NS, J_NO, J_NU, J_EARLY, J_SEQ, J_SEQ0, J_QUEUED
local J_C, J_TOTAL, J_START, J_END, J_CAPACITY, J_SOLD, J_PAUSED, J_HOLD, J_ABANDON
-- the hold clock at the call's time and its shift (holds.lua hold_clock),
-- and whether holds are paused (no admission at once then)
local J_HNOW, J_SHIFT, J_HELD
-- the access code's digest the join being run came with (nil: none),
-- and what its redemption answered: the code's number and the use's
local J_CODE, J_CID, J_CUSE
-- the phase the code was redeemed for when not the current one (a later
-- phase's pre-queue)
local J_CPH
-- the next phase's open pre-queue (phase, window, audience) and the
-- pending draw of a closed one (phase, base, count), from the config's
-- 'pq' and 'pqd' (draw.lua); nil: none
local J_PQ, J_PQ_OPEN, J_PQ_START, J_PQ_AUD
local J_PQD, J_PQD_BASE, J_PQD_N
-- each join's code digest ('' none), reused like the tables above
local J_CODES = {}

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
  codes_write()
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
  -- (a later phase's draw pending: its closed list ranks before)
  if not J_QUEUED then J_QUEUED = redis.call('ZCARD', K_WAITING) + J_NW / 2 + J_PQD_N end
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

-- j_admits is the refusal (nil: none) of a new join of user at now by
-- a phase's audience aud: closed, a code (redeemed for the phase phase,
-- J_CID and J_CUSE then set), none while codes are required, or the
-- registration's draw.
local function j_admits(user, now, aud, phase)
  if aud == 'closed' then return 'phase_closed' end
  if J_CODE then
    local refused
    refused, J_CID, J_CUSE = code_take(J_CODE, user, now, phase)
    return refused
  end
  if aud == 'code' then return 'code_required' end
  if aud == 'registered' and not code_selected(user) then return 'not_selected' end
  return nil
end

-- One join: request i, user at now (now_s: int(now)). enqueue.lua's header
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
    local raw = tonumber(score or redis.call('ZSCORE', K_WAITING, user)) or 0
    local s = wait_seq(user, raw, J_C[18])
    j_present(now_s, user)
    -- pre-queued: no place before the draw is made (positions.lua)
    if now < J_START or (raw < 0 and not redis.call('HGET', K_CONFIG, 'draw_digest')) then
      return {'ok', state, s, 0, 0, 0, J_START}
    end
    -- a pending pre-queued entry may rank before this user; a pending
    -- queued one never does (its sequence is larger)
    if J_EARLY then j_flush() end
    local pos = redis.call('ZRANK', K_WAITING, user) + 1
    -- a later phase's draw pending: its closed list ranks before
    if J_PQD and s > J_PQD_BASE then pos = pos + J_PQD_N end
    return {'ok', state, s, pos, 0, 0}
  end
  if state == 'prequeued' then
    -- in a later phase's pre-queue (draw.lua): its rank is drawn at the
    -- phase's start
    j_present(now_s, user)
    return {'ok', 'waiting', num(redis.call('HGET', K_USEQ, user)), 0, 0, 0, pq_start_of(user)}
  end
  if state == 'active' or state == 'seat_selected' or state == 'payment_pending' or state == 'completed' then
    local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
    if deadline then deadline = deadline + J_SHIFT else deadline = 0 end
    return {'ok', state, num(redis.call('HGET', K_USEQ, user)), 0, deadline, 0}
  end

  local early = false
  if now < J_START then
    if not prequeue_open(now, J_START, J_C[10], J_C[11]) then return {'sales_not_started'} end
    early = true
  end
  if J_END > 0 and now > J_END then return {'sales_ended'} end
  if J_SOLD >= J_TOTAL then return {'sold_out'} end
  -- the last refusals: nothing after them refuses, so a code's use is
  -- only taken by a join that places the user
  local refused = j_admits(user, now, J_C[15], J_C[14])
  local pq = false
  if refused and J_PQ and now >= J_PQ_OPEN and now < J_PQ_START then
    -- the next phase's pre-queue is open: a fan it admits waits for its
    -- draw (draw.lua)
    local later = j_admits(user, now, J_PQ_AUD, J_PQ)
    if not later then
      pq, refused, J_CPH = true, nil, J_PQ
    elseif refused == 'phase_closed' then
      refused = later
    end
  end
  if refused then return {refused} end

  local seq = j_next_seq()
  local s = int(seq)
  -- the join fact carries the code's use (number, use, phase), so the
  -- outbox that publishes the join also records the redemption
  local code = ''
  if J_CUSE then code = J_CID .. ':' .. int(J_CUSE) .. ':' .. (J_CPH or J_C[14] or '') end
  J_OUT[J_NO + 1], J_OUT[J_NO + 2] = 'j:' .. s, s .. '|' .. user .. '|' .. code .. '|' .. now_s
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

  if pq then
    j_seq_write()
    redis.call('HSET', K_STATE, user, 'prequeued')
    redis.call('HSET', K_USEQ, user, s)
    redis.call('ZADD', K_PQ, s, user)
    j_present(now_s, user)
    return {'ok', 'waiting', seq, 0, 0, 1, J_PQ_START}
  end

  if early then
    j_wait_as(draw_score(J_C[11], user), user)
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
  -- (not while a later phase's draw is pending: its fans come first)
  if J_PAUSED ~= '1' and not J_HELD and q == 0 and not J_PQD then
    local room = room_capacity(J_CAPACITY, J_TOTAL, J_SOLD)
    local admit = redis.call('ZCARD', K_ACTIVE) < room
    if not admit and room > 0 then
      local held = holds_counted(J_HNOW, 64)
      admit = held ~= nil and held < room
    end
    local cap = num(J_C[9])
    if admit and cap > 0 then
      -- the rate cap (admit_per_minute) counts immediate admissions too
      admit = cap_left(now, cap) > 0
    end
    if admit then
      j_seq_write()
      local deadline = admit_all({user}, {seq}, now, J_HOLD, J_SHIFT, 'joined')
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
-- user's own limit (own, the slot) when its key does not exist. A join's
-- third value is its access code's digest ('' or absent: none;
-- codes.lua), which a new join redeems after every other check.
local function enqueue_joins()
  local replies = {}
  J_C = redis.call('HMGET', K_CONFIG, 'total', 'sales_start_ms', 'sales_end_ms',
    'capacity', 'sold', 'paused', 'hold_ms', 'abandon_ms', 'admit_per_minute', 'early_join_ms', 'draw_seed',
    'hold_pause_ms', 'hold_paused_at', 'phase', 'audience', 'pq', 'pqd', 'pq_lo')
  if not J_C[1] then
    for i = 1, R_N do replies[i] = {'event_not_found'} end
    return replies
  end
  local now, now_s = clock()
  J_PQ, J_PQ_OPEN, J_PQ_START, J_PQ_AUD = pq_parse(J_C[16])
  if J_PQ and now >= J_PQ_START and pq_close(now) then
    -- the first call after the next phase's start closes its pre-queue
    -- before any join takes a number: they all rank after its draw
    local d = redis.call('HMGET', K_CONFIG, 'pqd', 'pq_lo')
    J_PQ, J_C[17], J_C[18] = nil, d[1], d[2]
  end
  local _
  J_PQD, _, J_PQD_BASE, J_PQD_N = pq_parse(J_C[17])
  J_PQD_BASE, J_PQD_N = J_PQD_BASE or 0, num(J_PQD_N)
  J_TOTAL, J_START, J_END, J_CAPACITY, J_SOLD, J_PAUSED, J_HOLD, J_ABANDON =
    num(J_C[1]), num(J_C[2]), num(J_C[3]), num(J_C[4]), num(J_C[5]), J_C[6], num(J_C[7]), num(J_C[8])
  J_NW, J_NS, J_NO, J_NU, J_EARLY, J_SEQ, J_SEQ0, J_QUEUED = 0, 0, 0, 0, false, nil, nil, nil
  reqs_read()
  for i = 1, R_N do J_CODES[i] = ARGV[R_FIRST + (i - 1) * R_STRIDE + 2] or '' end
  codes_read(J_CODES, R_N)
  J_HNOW, J_HELD = hold_clock(now, J_C[12], J_C[13])
  J_SHIFT = now - J_HNOW

  for i = 1, R_N do
    local wait = req_wait(i, now)
    if wait > 0 then
      replies[i] = {'rate_limited', wait}
    else
      J_CODE, J_CID, J_CUSE, J_CPH = J_CODES[i], nil, nil, nil
      if J_CODE == '' then J_CODE = nil end
      local r = j_join(i, R_USERS[i], now, now_s)
      replies[i] = r
      if r[1] == 'ok' then
        -- the sales start (0 unless pre-queued), then the call's time
        r[7] = r[7] or 0
        r[8] = now
        -- a redeemed code: its number, the use's, and the event's phase
        if J_CUSE then r[9], r[10], r[11] = J_CID, J_CUSE, J_CPH or J_C[14] or '' end
      end
      if L_M > 0 then
        local spare = 0
        if r[6] == 1 then spare = num(ARGV[R_FIRST + (i - 1) * R_STRIDE + 1]) end
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
