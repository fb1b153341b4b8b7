-- enqueue: join the queue (the library's enqueue_joins).
-- ARGV: 1 user_id, 2 own (the number, from 1, of the user's own limit;
--   0: none), then per limit its interval_ms and burst
-- Replies: {'ok', state, sequence, position, deadline_ms, created (0|1), sales_start_ms, now_ms}
--   (state 'waiting', or 'active' when admitted at once; sales_start_ms 0
--   but for a pre-queued join, whose position is 0; now_ms: the call's time)
--   | {'event_not_found'} | {'sales_not_started'} | {'sales_ended'} | {'sold_out'} | {'rate_limited', retry_after_ms}
-- KEYS: config, waiting, active, seq, seen, outbox, rate, state, useq, useat, upay, ugrace, alog, then one per limit (ops.go)
reqs_at(1, 1, 2, false, #KEYS - NKEYS, 3)
return enqueue_joins()[1]
