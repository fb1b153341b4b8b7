-- get_position: where a user stands; a waiting user's call is a sign of presence.
-- ARGV: 1 user_id, then per limit its interval_ms and burst
-- Replies: {'ok', state, sequence, position, seat_ids, payment_id, deadline_ms,
--   sold_out (0|1), served, waiting_count, admitted_last_minute, admit_per_minute, sales_start_ms,
--   now_ms (the call's time), sales_ended (0|1: past sales_end by now_ms)}
--   (a pre-queued user's position is 0 before the start and until the draw is made)
--   | {'not_found', sold_out, served, waiting_count, admitted_last_minute,
--   admit_per_minute, sales_start_ms, sales_ended} | {'event_not_found'} | {'rate_limited', retry_after_ms}
-- KEYS: config, waiting, active, seen, rate, state, useq, useat, upay, pq, then one per limit (ops.go)
reqs_at(1, 1, 1, false, #KEYS - NKEYS, 2)
return read_positions()[1]
