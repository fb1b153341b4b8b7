-- enqueue: join the queue (the library's enqueue_joins).
-- ARGV: 1 user_id, 2 own (the number, from 1, of the user's own limit;
--   0: none), 3 an access code's digest (lib/codes.lua; '' or absent:
--   none), then per limit its interval_ms and burst
-- Replies: {'ok', state, sequence, position, deadline_ms, created (0|1), sales_start_ms, now_ms
--   [, code_id, use, phase (a new join that redeemed the code; phase: the event's, '' none)]}
--   (state 'waiting', or 'active' when admitted at once; sales_start_ms 0
--   but for a pre-queued join, whose position is 0 until the draw is made;
--   now_ms: the call's time)
--   | {'event_not_found'} | {'sales_not_started'} | {'sales_ended'} | {'sold_out'} | {'rate_limited', retry_after_ms}
--   | {'invalid_code'} | {'code_wrong_phase'} | {'code_expired'} | {'code_taken'} | {'code_used_up'}
--   | {'code_required'} (the phase's audience is code holders and none came)
--   | {'not_selected'} (the phase's audience is the registration's selected fans)
--   | {'phase_closed'} (between two phases of the event's schedule)
-- KEYS: config, waiting, active, seq, seen, outbox, rate, state, useq, useat, upay, ugrace, alog, codes, pq, pqdraw, then one per limit (ops.go)
local m = #KEYS - NKEYS
reqs_at(1, 1, 3, false, m, 4)
return enqueue_joins()[1]
