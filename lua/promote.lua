-- promote: reclaim expired holds, then admit waiting users in order into the room's free slots.
-- ARGV: 1 max (0 = the event's batch size)
-- Replies: {'ok', reason, promoted, expired, abandoned, now_ms} | {'event_not_found'}
--   reason 'room_full' | 'no_waiting' | 'sold_out' | 'paused' | 'batch'
--     | 'rate_capped' | 'not_started' | 'draw_pending' | 'sales_ended'
--     (past sales_end: nobody is admitted, holds still expire) | 'provider_degraded'
--     (hold clocks paused: nothing expires, nobody is admitted; the reply
--     then ends with paused_since_ms, when they stopped)
--   promoted {user, sequence, deadline_ms, ...}; expired {user, sequence,
--   seat_ids, payment_id, deadline_ms, ...}; abandoned {user, sequence, ...}
-- KEYS: config, seats, waiting, active, seen, outbox, rate, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers, alloc (ops.go)
local max = tonumber(ARGV[1])
local c = redis.call('HMGET', K_CONFIG, 'total', 'sold', 'capacity', 'hold_ms', 'batch',
  'abandon_ms', 'paused', 'abandon_since_ms', 'admit_per_minute', 'sales_start_ms',
  'prequeued', 'drawn', 'hold_pause_ms', 'hold_paused_at', 'sales_end_ms', 'pqd', 'pq', 'pq_lo')
if not c[1] then
  return {'event_not_found'}
end
local now, now_s = clock()
local hnow, held = hold_clock(now, c[13], c[14])
local shift = now - hnow
local total, capacity, hold_ms, batch, abandon_ms, paused, abandon_since =
  num(c[1]), num(c[3]), num(c[4]), num(c[5]), num(c[6]), c[7], num(c[8])
if max <= 0 then max = batch end
if max <= 0 then max = 500 end

-- 1. Reclaim holds whose deadline passed (a lost timeout message never
--    leaks a slot). Payment-pending holds get their grace period instead.
local expired = {}
local due = redis.call('ZRANGEBYSCORE', K_ACTIVE, '-inf', hnow, 'WITHSCORES', 'LIMIT', 0, max)
for i = 1, #due, 2 do
  local user = due[i]
  local deadline = tonumber(due[i + 1])
  local outcome, _, seat = expire_due(user, deadline, hnow)
  deadline = deadline + shift -- on Redis's clock
  if outcome == 'released' then
    local seq = num(redis.call('HGET', K_USEQ, user)) -- in the room: not waiting
    local pay = redis.call('HGET', K_UPAY, user) or ''
    expired[#expired + 1] = user
    expired[#expired + 1] = seq
    expired[#expired + 1] = seat
    expired[#expired + 1] = pay
    -- the hold's deadline rides in the entry: booking_expired's time, the
    -- same the timeout path publishes (handle_timeout.lua)
    expired[#expired + 1] = deadline
    outbox_expired(int(seq), user, deadline, seat, now_s)
    close_offer(user, 'expired', now_s)
    waitlist_offer(seat, now, now_s)
  end
end

local sold = num(redis.call('HGET', K_CONFIG, 'sold'))
local promoted, abandoned = {}, {}
if sold >= total then
  return {'ok', 'sold_out', promoted, expired, abandoned, now}
end
if sales_ended(now, c[15]) then
  return {'ok', 'sales_ended', promoted, expired, abandoned, now}
end
if paused == '1' then
  return {'ok', 'paused', promoted, expired, abandoned, now}
end
if held then
  return {'ok', 'provider_degraded', promoted, expired, abandoned, now, num(c[14])}
end
if now < num(c[10]) then
  -- before the sales start only pre-queued users wait (enqueue.lua)
  return {'ok', 'not_started', promoted, expired, abandoned, now}
end
if (num(c[11]) > 0 and c[12] ~= '1') or c[16] or (c[17] and now >= select(3, pq_parse(c[17]))) then
  -- the pre-queue's draw is published first (booking.Store.CloseDraw);
  -- a later phase's from its start, closed (draw.lua pq_close) or not
  -- yet, until placed and published (booking.Store.ClosePhaseDraw)
  return {'ok', 'draw_pending', promoted, expired, abandoned, now}
end

-- 2. Fill free capacity, at most max users, skipping absent users.
local free = room_capacity(capacity, total, sold) - redis.call('ZCARD', K_ACTIVE)
if free <= 0 then
  return {'ok', 'room_full', promoted, expired, abandoned, now}
end
local want = math.min(free, max)
local capped = cap_left(now, num(c[9]))
if capped and capped < want then
  if capped == 0 then
    if redis.call('ZCARD', K_WAITING) == 0 then
      return {'ok', 'no_waiting', promoted, expired, abandoned, now}
    end
    return {'ok', 'rate_capped', promoted, expired, abandoned, now}
  end
  want = capped
end
local admitted, popped, reason, users, seqs = 0, 0, 'room_full', {}, {}
while admitted < want do
  if popped >= max * 4 then reason = 'batch' break end
  local next = redis.call('ZPOPMIN', K_WAITING, want - admitted)
  if #next == 0 then reason = 'no_waiting' break end
  for i = 1, #next, 2 do
    local user, seq = next[i], tonumber(next[i + 1])
    -- a pre-queued or drawn user's score is its draw key, not its sequence
    seq = wait_seq(user, seq, c[18])
    popped = popped + 1
    local absent = false
    if abandon_ms > 0 then
      -- last seen: the presence entry, but never before abandonment was
      -- switched on (a user who joined while it was off has no entry)
      local seen = math.max(num(redis.call('ZSCORE', K_SEEN, user)), abandon_since)
      redis.call('ZREM', K_SEEN, user)
      absent = seen < now - abandon_ms
    end
    if absent then
      redis.call('HSET', K_STATE, user, 'abandoned')
      local s = int(seq)
      redis.call('HSET', K_USEQ, user, s) -- out of the queue: the sequence moves to useq
      -- announced as a cancellation by the system (booking_cancelled,
      -- reason abandoned); there is no slot to release
      outbox_cancelled(s, user, 'abandoned', '', now_s)
      abandoned[#abandoned + 1] = user
      abandoned[#abandoned + 1] = seq
    else
      admitted = admitted + 1
      users[admitted], seqs[admitted] = user, seq
    end
  end
end
local deadline = admit_all(users, seqs, now, hold_ms, shift)
for i = 1, admitted do
  promoted[#promoted + 1] = users[i]
  promoted[#promoted + 1] = seqs[i]
  promoted[#promoted + 1] = deadline
end
if admitted == want and want == max and want < free then reason = 'batch' end
if admitted == want and capped and want == capped and reason ~= 'batch' and want < free then
  reason = 'rate_capped'
  if redis.call('ZCARD', K_WAITING) == 0 then reason = 'no_waiting' end
elseif admitted == want and reason ~= 'batch' then
  if redis.call('ZCARD', K_WAITING) == 0 then reason = 'no_waiting' else reason = 'room_full' end
end
return {'ok', reason, promoted, expired, abandoned, now}
