-- get_position_batch: several position reads of one event, each answered as get_position would in that order.
-- ARGV: 1 n (reads), 2 m (limits per read), then per limit slot its
--   interval_ms and burst, then per read user_id, and per slot the
--   number, from 1, of its limit key among the keys after the event's
-- Replies: a list of n get_position replies
-- KEYS: config, waiting, active, seen, rate, state, useq, useat, upay, pq, then one per limit (ops.go)
local m = tonumber(ARGV[2])
reqs_at(tonumber(ARGV[1]), 3 + 2 * m, 1, true, m, 3)
return read_positions()
