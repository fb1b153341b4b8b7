-- restore_event.lua — rebuild an event whose Redis state is gone, from its
-- definition and sold seats in the ledger (PostgreSQL, pkg/ledger): the
-- configuration, the seat map, every sold seat and every completed user.
-- Waiting users and open holds are not durable: whatever is left of the
-- event's other keys is deleted and those users join again. The payment
-- registry (pays) is kept; the seat status string is deleted here and
-- rebuilt whole from the seats hash by the next seat-map read
-- (seat_status.lua), once; an explicit map's seat index is rebuilt here
-- (seat prices need it). The join
-- sequence restarts above seq_base (and above any counter left), so no
-- join sequence, and no fact id built from one, repeats after a rebuild.
-- KEYS: the event key set (lib.lua)
--   reads:  config, seats, seq, upay, useat
--   writes: active, config, outbox, rate, seatidx, seatmap, seats, seen, seq, state, status, ugrace, upay, useat, useq, waiting
-- ARGV: 1 name, 2 capacity, 3 hold_ms, 4 grace_ms, 5 sales_start_ms,
--       6 sales_end_ms (0 = none), 7 batch, 8 abandon_ms, 9 rows, 10 per_row,
--       11 paused (0|1), 12 now_ms, 13 seq_base, 14 n (number of seats),
--       15 currency, 16 max_seats, 17 prices, 18 sections (create_event.lua),
--       19..18+n seat ids in display order (validated unique by the caller),
--       then 4 per sold seat: user_id, seat_id, payment_id, join sequence
--       (an order of several seats: one entry per seat, same payment id;
--       the user's useat lists them all)
-- The event_restored fact is written to the outbox in the same step,
-- 'r:<seq_base>' -> '<seq_base>|<reason>||<now_ms>' (lib.lua), so a Kafka
-- outage at the rebuild cannot lose it: the restorer publishes and
-- acknowledges it, the safety net's sweep publishes what it could not.
-- Replies: {'ok', total_seats, sold, seq_base, skipped, reason}
--   skipped: sold seats not in the seat map, or a seat given twice
--   reason: 'seats=<n> sold=<n> completed_users=<n>' (the fact's reason)
--   | {'event_exists'}  the event's configuration is present: nothing changed
if redis.call('EXISTS', K_CONFIG) == 1 then
  return {'event_exists'}
end
local n = tonumber(ARGV[14])
local base = num(ARGV[13])
local left = num(redis.call('GET', K_SEQ))
if left > base then base = left end
redis.call('DEL', K_SEATS, K_SEATMAP, K_WAITING, K_ACTIVE, K_SEQ, K_SEEN, K_OUTBOX,
  K_RATE, K_STATE, K_USEQ, K_USEAT, K_UPAY, K_UGRACE, K_STATUS, K_SEATIDX)
local FIRST = 19
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
  'abandon_ms', ARGV[8], 'rows', ARGV[9], 'per_row', ARGV[10], 'created_ms', ARGV[12],
  'paused', ARGV[11], 'total', n, 'held', 0, 'sold', sold, 'served', b,
  'currency', ARGV[15], 'max_seats', ARGV[16], 'prices', ARGV[17], 'sections', ARGV[18])
local reason = 'seats=' .. int(n) .. ' sold=' .. int(sold) .. ' completed_users=' .. int(users)
redis.call('HSET', K_OUTBOX, 'r:' .. b, b .. '|' .. reason .. '||' .. ARGV[12])
return {'ok', n, sold, base, skipped, reason}
