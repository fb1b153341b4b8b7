-- enqueue.lua — join the queue for an event.
-- KEYS: the event key set (lib.lua)
--   reads:  active, config, rate, state, ugrace, useq, waiting
--   writes: active, config, outbox, rate, seen, seq, state, ugrace, upay, useat, useq, waiting
--   and after them the abuse-limit keys, one per limit (lib.lua limits_check)
-- ARGV: 1 user_id, 2 now_ms (an integer, written as given), 3 own (the number, from 1, of the limit that
--   is the joining user's own, booking.UserSubject; 0 or absent: none),
--   then from ARGV[4] per limit its interval_ms and burst
-- Replies:
--   {'ok', state, sequence, position, deadline_ms, created}
--     state 'waiting' (position >= 1) or 'active' (admitted at once because
--     the room had free capacity and nobody was waiting; deadline_ms set);
--     on a repeated join: the user's current state and created = 0.
--   {'event_not_found'} | {'sales_not_started'} | {'sales_ended'} | {'sold_out'}
--   {'rate_limited', retry_after_ms}: a limit refused the join (of an
--     existing event, before anything else; nothing changed)
-- Every join the limits allow is counted against each of them, except
-- that the join that places a user (created = 1) does not write the
-- user's own limit key when the user has none: the user's first request
-- needs no record to be judged (a subject without a key is allowed), and
-- writing one costs every arriving user a new key with an expiry, a third
-- of a join's limit cost (docs/benchmarks.md). The user's next request is
-- counted as if it were the first.
-- Pre-queue (config early_join_ms > 0 and draw_seed set): a join in
-- [sales_start_ms - early_join_ms, sales_start_ms) waits with the score
-- h - 2^53, h the first 13 hex digits (52 bits) of
-- sha1(draw_seed .. ':' .. user): pre-queued users are ordered by a random
-- permutation fixed by the committed seed (ties: by user id, ZSET order),
-- all ahead of later joiners (score = sequence >= 1). Their replies carry
-- position 0 (the rank stays secret until the start) and a seventh
-- element, sales_start_ms; the config's 'prequeued' counts them.
-- A user who finished a hold without buying (cancelled, expired, failed,
-- abandoned) may join again at the back; a completed user may not.
-- A waiting user is one entry of waiting (score = sequence): no state or
-- useq field (lib.lua); a pre-queued user's sequence is kept in useq.
-- Every new entry (created = 1) also writes the outbox entry
-- 'j:<sequence>' -> '<sequence>|<user>||<now_ms>', the booking_request fact
-- still to be published to Kafka (the gateway's relay publishes and
-- acknowledges it after answering; the safety net sweeps what it missed).
local user, now = ARGV[1], tonumber(ARGV[2])
local c = redis.call('HMGET', K_CONFIG, 'total', 'sales_start_ms', 'sales_end_ms',
  'capacity', 'sold', 'paused', 'hold_ms', 'abandon_ms', 'admit_per_minute', 'early_join_ms', 'draw_seed')
if not c[1] then
  return {'event_not_found'}
end
local wait, lim_cur, lim_tats = limits_check(4, now)
if wait > 0 then return {'rate_limited', wait} end

-- the join itself; the limits are counted after it (see above)
local function join()
  local total, start_ms, end_ms, capacity, sold, paused, hold_ms, abandon_ms =
    num(c[1]), num(c[2]), num(c[3]), num(c[4]), num(c[5]), c[6], num(c[7]), num(c[8])

  -- waiting first: a waiting user's repeated join (a reload) needs no
  -- state field read, and a new user misses both either way
  local state, score = nil, redis.call('ZSCORE', K_WAITING, user)
  if score then state = 'waiting' else state = redis.call('HGET', K_STATE, user) end
  if state == 'waiting' then
    -- (a state field 'waiting': an entry written before waiting users lost it)
    local seq = tonumber(score or redis.call('ZSCORE', K_WAITING, user)) or 0
    if seq < 1 then seq = num(redis.call('HGET', K_USEQ, user)) end
    if abandon_ms > 0 then redis.call('ZADD', K_SEEN, ARGV[2], user) end
    if now < start_ms then return {'ok', state, seq, 0, 0, 0, start_ms} end
    return {'ok', state, seq, redis.call('ZRANK', K_WAITING, user) + 1, 0, 0}
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

  local seq = redis.call('INCR', K_SEQ)
  local s = int(seq)
  redis.call('HSET', K_OUTBOX, 'j:' .. s, s .. '|' .. user .. '||' .. ARGV[2])
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
    redis.call('ZADD', K_WAITING, string.format('%.0f', h - 9007199254740992), user)
    -- the score is the draw key, so the sequence is kept beside it
    redis.call('HSET', K_USEQ, user, s)
    redis.call('HINCRBY', K_CONFIG, 'prequeued', 1)
    if abandon_ms > 0 then redis.call('ZADD', K_SEEN, ARGV[2], user) end
    return {'ok', 'waiting', seq, 0, 0, 1, start_ms}
  end

  -- Admit at once when nobody is waiting and the room has a free slot. It
  -- counts what promotion counts: every hold when the room is not full, else
  -- (lib.lua holds_counted) the live holds plus overdue payment_pending holds
  -- that will get their grace; other overdue holds are reclaimed by the next
  -- promotion. Undecided (many overdue holds): the user waits for promotion.
  local queued = redis.call('ZCARD', K_WAITING)
  if paused ~= '1' and queued == 0 then
    local room = room_capacity(capacity, total, sold)
    local admit = redis.call('ZCARD', K_ACTIVE) < room
    if not admit and room > 0 then
      local n = holds_counted(now, 64)
      admit = n ~= nil and n < room
    end
    if admit and num(c[9]) > 0 then
      -- the rate cap (admit_per_minute) counts immediate admissions too
      admit = cap_left(now, num(c[9])) > 0
    end
    if admit then
      local deadline = admit_all({user, seq}, now, hold_ms)
      return {'ok', 'active', seq, 0, deadline, 1}
    end
  end

  redis.call('ZADD', K_WAITING, s, user)
  if abandon_ms > 0 then redis.call('ZADD', K_SEEN, ARGV[2], user) end
  -- the new sequence is the largest, so the user is last in line
  return {'ok', 'waiting', seq, queued + 1, 0, 1}
end

local reply = join()
local spare = 0
if reply[6] == 1 then spare = num(ARGV[3]) end
limits_count(lim_cur, lim_tats, now, spare)
return reply
