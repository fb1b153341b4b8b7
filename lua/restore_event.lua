-- restore_event: rebuild an event whose Redis state is gone from the ledger's definition and sold seats.
-- ARGV: 1 name, 2 capacity, 3 hold_ms, 4 grace_ms, 5 sales_start_ms,
--   6 sales_end_ms, 7 batch, 8 abandon_ms, 9 rows, 10 per_row, 11 paused,
--   12 seq_base, 13 n, 14 currency, 15 max_seats, 16 prices,
--   17 sections, 18 alog_size, 19 alog_head, 20 fair_salt (the admission
--   log's archived entries, the hash of the last, and its salt: the new
--   alog list continues that chain; 0, '', '': a new log), 21 k, then k
--   config field, value pairs written with the config (the door, sales
--   window and waitlist settings update_event takes, phase and audience,
--   the schedule, the beacon, the draws' seeds and commitments, and
--   restore_pending), then n seat ids, then 4 per sold seat: user_id,
--   seat_id, payment_id, join sequence
-- Replies: {'ok', total_seats, sold, seq_base, skipped, reason, now_ms} | {'event_exists'}
-- KEYS: config, seats, seatmap, waiting, active, seq, seen, outbox, rate, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers, alloc, pq, pqdraw (ops.go)
if redis.call('EXISTS', K_CONFIG) == 1 then
  return {'event_exists'}
end
local n = tonumber(ARGV[13])
local base = num(ARGV[12])
local _, now = clock()
local left = num(redis.call('GET', K_SEQ))
if left > base then base = left end
redis.call('DEL', K_SEATS, K_SEATMAP, K_WAITING, K_ACTIVE, K_SEQ, K_SEEN, K_OUTBOX,
  K_RATE, K_STATE, K_USEQ, K_USEAT, K_UPAY, K_UGRACE, K_STATUS, K_SEATIDX, K_RUNS, K_ALOG, K_ALLOC, K_PQ, K_PQDRAW)
-- the waitlist is kept; a fan whose offer was open (its hold is gone)
-- goes back to their place on it
local open = redis.call('HGETALL', K_OFFERS)
for i = 1, #open, 2 do
  if string.sub(open[i], 1, 2) == 'o:' then
    local user = string.sub(open[i], 3)
    local s, seats = string.match(open[i + 1], '^([^|]*)|[^|]*|([^|]*)|')
    redis.call('ZADD', K_WAITLIST, s, user)
    redis.call('HSET', K_OFFERS, 'w:' .. user, int(#split_seats(seats)))
    redis.call('HDEL', K_OFFERS, open[i], 's:' .. s)
  end
end
local CONF = tonumber(ARGV[21])
local FIRST = 22 + 2 * CONF
write_seatmap(FIRST, FIRST - 1 + n)
local sold, skipped, users = 0, 0, 0
for i = FIRST + n, #ARGV - 3, 4 do
  local user, seat, pid, seq = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  if redis.call('HGET', K_SEATS, seat) == '' then
    redis.call('HSET', K_SEATS, seat, 's:' .. user)
    redis.call('HSET', K_STATE, user, 'completed')
    local prev = redis.call('HGET', K_USEAT, user)
    if prev and redis.call('HGET', K_UPAY, user) == pid then
      seat = prev .. ',' .. seat
    else
      users = users + 1
    end
    redis.call('HSET', K_USEAT, user, seat)
    redis.call('HSET', K_UPAY, user, pid)
    redis.call('HSET', K_USEQ, user, seq)
    sold = sold + 1
  else
    skipped = skipped + 1
  end
end
local b = int(base)
redis.call('SET', K_SEQ, b)
redis.call('HSET', K_CONFIG,
  'name', ARGV[1], 'capacity', ARGV[2], 'hold_ms', ARGV[3], 'grace_ms', ARGV[4],
  'sales_start_ms', ARGV[5], 'sales_end_ms', ARGV[6], 'batch', ARGV[7],
  'abandon_ms', ARGV[8], 'rows', ARGV[9], 'per_row', ARGV[10], 'created_ms', now,
  'paused', ARGV[11], 'total', n, 'held', 0, 'sold', sold, 'served', b,
  'currency', ARGV[14], 'max_seats', ARGV[15], 'prices', ARGV[16], 'sections', ARGV[17])
if ARGV[20] ~= '' then
  redis.call('HSET', K_CONFIG, 'fair_salt', ARGV[20])
end
if num(ARGV[18]) > 0 then
  -- the archived entries are on Kafka already
  redis.call('HSET', K_CONFIG, 'alog_base', ARGV[18], 'alog_head', ARGV[19], 'alog_kafka', ARGV[18])
end
if CONF > 0 then
  redis.call('HSET', K_CONFIG, unpack(ARGV, 22, FIRST - 1))
end
local reason = 'seats=' .. int(n) .. ' sold=' .. int(sold) .. ' completed_users=' .. int(users)
redis.call('HSET', K_OUTBOX, 'r:' .. b, b .. '|' .. reason .. '||' .. now)
return {'ok', n, sold, base, skipped, reason, now}
