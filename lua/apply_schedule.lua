-- apply_schedule: make current the phase the event's schedule says at Redis's time, once per boundary.
-- ARGV: 1 mode ('check': answer only, 'apply': write, 'leave': the next users to leave), 2 users per leave step
-- Replies: {'ok', changed (0|1), slot, phase, audience, previous phase, previous audience, due (0|1), leaving (0|1)}
--   | {'event_not_found'} | {'invalid_argument'}
-- KEYS: config, waiting, seq, outbox, state, useq, pq, pqdraw (ops.go)
-- The schedule is config 'schedule' (booking.Schedule writes it): one
-- line per phase, in order, '<id>|<starts_ms>|<ends_ms>|<audience>|
-- <admit_per_minute>|<hold_ms>|<max_seats>|<early_join_ms>|<prices>'.
-- The slot now is 'p<i>' inside phase i's window (the first phase's
-- opens early_join_ms before its start, so its pre-queue takes its
-- audience and codes), 'g<i>' in the gap before phase i (after the
-- last: 'g<n+1>'), '' before the first. 'sched_slot' is the slot last
-- applied: while the slot stays the same nothing is written (due 0; an
-- operator's manual change stands until the next boundary). A new
-- phase slot sets the phase, its audience and its settings; a gap
-- closes joins (audience 'closed'). changed is 1 when the phase or the
-- audience changed (the change the ledger records); with the event's
-- on_phase_change 'leave' (config 'phase_leave' '1') the users waiting
-- when a phase ends leave the queue: their state becomes 'phase_ended'
-- (get_position reports it), each with a cancelled outbox entry from
-- 'phase_ended' (booking_cancelled and the user's notification), and
-- they may join again in the next phase,
-- at its end of the line; users in the room finish within their hold.
-- The change records the last join sequence of the phase that ended
-- ('leave_below') and takes out the first ARGV[2] waiting users at or
-- below it; leaving 1 says more are left, which calls in mode 'leave'
-- take out, ARGV[2] at a time, so no call holds Redis for the whole
-- queue (users who join the next phase meanwhile rank after them and
-- stay).
local mode, step = ARGV[1], tonumber(ARGV[2]) or 0
if (mode ~= 'check' and mode ~= 'apply' and mode ~= 'leave') or step < 1 then return {'invalid_argument'} end
local c = redis.call('HMGET', K_CONFIG, 'total', 'schedule', 'sched_slot', 'phase', 'audience', 'phase_leave', 'leave_below',
  'pq_lo')
if not c[1] then return {'event_not_found'} end
local was, wasaud = c[4] or '', c[5] or 'public'

-- leave_step takes out up to step waiting users who joined at or below
-- the recorded sequence, each announced by a cancellation entry from
-- 'phase_ended' with their join's sequence (a pre-queued user's is in
-- useq); 1 while more are left
local function leave_step()
  local below = c[7]
  if not below then return 0 end
  local w = redis.call('ZRANGEBYSCORE', K_WAITING, '-inf', below, 'WITHSCORES', 'LIMIT', 0, step)
  local _, now_s = clock()
  for j = 1, #w, 2 do
    local user = w[j]
    local score = wait_seq(user, tonumber(w[j + 1]), c[8])
    redis.call('HSET', K_USEQ, user, int(score))
    redis.call('HSET', K_STATE, user, 'phase_ended')
    outbox_cancelled(int(score), user, 'phase_ended', '', now_s)
    redis.call('ZREM', K_WAITING, user)
  end
  if #w < 2 * step then
    redis.call('HDEL', K_CONFIG, 'leave_below')
    return 0
  end
  return 1
end

if mode == 'leave' then return {'ok', 0, c[3] or '', was, wasaud, was, wasaud, 0, leave_step()} end
local pending = 0
if c[7] then pending = 1 end
if not c[2] or c[2] == '' then return {'ok', 0, c[3] or '', was, wasaud, was, wasaud, 0, pending} end
local now = clock()
local slot, found, nextp = '', nil, nil
local i = 0
local lines = string.gmatch(c[2], '[^\n]+')
local function parse(line)
  local id, st, en, aud, admit, hold, seats, early, prices =
    string.match(line, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
  if not id then return nil end
  return {id = id, st = num(st), en = num(en), aud = aud, admit = admit, hold = hold, seats = seats, early = early,
    prices = prices}
end
for line in lines do
  i = i + 1
  local p = parse(line)
  if not p then return {'invalid_argument'} end
  local from = p.st
  if i == 1 then from = from - num(p.early) end
  if now < from then
    if i > 1 then slot, nextp = 'g' .. int(i), p end
    break
  end
  if now < p.en then
    slot, found = 'p' .. int(i), p
    local after = lines()
    if after then nextp = parse(after) end
    break
  end
  slot = 'g' .. int(i + 1)
end
if slot == (c[3] or '') or slot == '' then return {'ok', 0, slot, was, wasaud, was, wasaud, 0, pending} end
local phase, aud = '', 'closed'
if found then phase, aud = found.id, found.aud end
local changed = 0
if phase ~= was or aud ~= wasaud then changed = 1 end
if mode == 'check' then return {'ok', changed, slot, phase, aud, was, wasaud, 1, pending} end
redis.call('HSET', K_CONFIG, 'sched_slot', slot, 'phase', phase, 'audience', aud)
-- the pre-queue of the phase starting now closes (draw.lua), before
-- anything else takes a number
pq_close(now)
if nextp and num(nextp.early) > 0 and redis.call('HEXISTS', K_CONFIG, 'pq_seed:' .. nextp.id) == 1 then
  -- the next phase's pre-queue (draw.lua), unless another one is still
  -- open (its close waits for a pending draw)
  local open = pq_parse(redis.call('HGET', K_CONFIG, 'pq'))
  if not open or open == nextp.id then
    redis.call('HSET', K_CONFIG, 'pq', nextp.id .. '|' .. int(nextp.st - num(nextp.early)) .. '|' .. int(nextp.st) .. '|' ..
      nextp.aud)
  end
end
if found then
  redis.call('HSET', K_CONFIG, 'admit_per_minute', found.admit, 'hold_ms', found.hold,
    'max_seats', found.seats, 'early_join_ms', found.early)
  if found.prices ~= '' then redis.call('HSET', K_CONFIG, 'prices', found.prices) end -- '' for an event made before sections
end
if c[6] == '1' and was ~= '' and phase ~= was then
  -- (a phase whose pre-queue closed: its draw's reserved numbers stay)
  local closed = redis.call('HGET', K_CONFIG, 'pq_closed:' .. phase)
  c[7] = (closed and string.match(closed, '^([^|]*)')) or redis.call('GET', K_SEQ) or '0'
  redis.call('HSET', K_CONFIG, 'leave_below', c[7])
end
return {'ok', changed, slot, phase, aud, was, wasaud, 1, leave_step()}
