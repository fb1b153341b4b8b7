-- get_position.lua — where a user stands.
-- A waiting user's call counts as a sign of presence (abandonment heartbeat).
-- KEYS: the event key set (lib.lua)
--   reads:  active, config, rate, state, upay, useat, useq, waiting
--   writes: seen
--   and after them the abuse-limit keys, one per limit (lib.lua read_positions)
-- ARGV: 1 user_id, 2 now_ms, then per limit its interval_ms and burst
-- Replies:
--   {'ok', state, sequence, position, seat_id, payment_id, deadline_ms,
--    sold_out (0|1), served, waiting_count, admitted_last_minute,
--    admit_per_minute}
--   {'not_found', sold_out, served, waiting_count, admitted_last_minute,
--    admit_per_minute}
--   admit_per_minute: the event's rate cap (0 = none), for the ETA;
--   a last element sales_start_ms. Before it a waiting (pre-queued) user's
--   position is 0: the draw's order stays secret until the start.
--   {'event_not_found'}
--   {'rate_limited', retry_after_ms}: a limit refused the read (nothing changed)
-- The read itself is lib.lua's read_positions, which
-- get_position_batch.lua runs for several reads in one call.
local steps, bursts, keys = {}, {}, {}
for s = 1, #KEYS - NKEYS do
  steps[s], bursts[s], keys[s] = tonumber(ARGV[1 + 2 * s]), tonumber(ARGV[2 + 2 * s]), s
end
return read_positions({{user = ARGV[1], now = tonumber(ARGV[2]), now_s = ARGV[2], keys = keys}}, steps, bursts)[1]
