-- create_event: create an event with its seat map.
-- ARGV: 1 name, 2 capacity, 3 hold_ms, 4 grace_ms, 5 sales_start_ms,
--   6 sales_end_ms (0 = none), 7 batch, 8 abandon_ms, 9 rows, 10 per_row,
--   11 currency, 12 max_seats, 13 prices ('<len>:<cents>,...'),
--   14 sections (JSON, for Go), 15 k, then k config field, value pairs
--   written with the config (the door, sales window and waitlist settings,
--   the draw's seed and commitment: update_event's fields), then the seat
--   ids in display order (unique)
-- Replies: {'ok', total_seats} | {'event_exists'}
-- KEYS: config, seats, seatmap, status, seatidx, runs (ops.go)
if redis.call('EXISTS', K_CONFIG) == 1 then
  return {'event_exists'}
end
local CONF = tonumber(ARGV[15])
local FIRST = 16 + 2 * CONF
local _, now = clock()
local total = #ARGV - FIRST + 1
redis.call('HSET', K_CONFIG,
  'name', ARGV[1], 'capacity', ARGV[2], 'hold_ms', ARGV[3], 'grace_ms', ARGV[4],
  'sales_start_ms', ARGV[5], 'sales_end_ms', ARGV[6], 'batch', ARGV[7],
  'abandon_ms', ARGV[8], 'rows', ARGV[9], 'per_row', ARGV[10], 'created_ms', now,
  'currency', ARGV[11], 'max_seats', ARGV[12], 'prices', ARGV[13], 'sections', ARGV[14],
  'paused', 0, 'total', total, 'held', 0, 'sold', 0, 'served', 0)
if CONF > 0 then
  redis.call('HSET', K_CONFIG, unpack(ARGV, 16, FIRST - 1))
end
write_seatmap(FIRST, #ARGV)
redis.call('SET', K_STATUS, string.rep('a', total))
runs_build()
return {'ok', total}
