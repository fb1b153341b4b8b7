-- enqueue_batch: several joins of one event, each answered as enqueue would in that order.
-- ARGV: 1 n (joins), 2 m (limits per join), then per limit slot its
--   interval_ms and burst, then per join user_id, own, code digest ('':
--   none), and per slot the number, from 1, of its limit key among the
--   keys after the event's
-- Replies: a list of n enqueue replies
-- KEYS: config, waiting, active, seq, seen, outbox, rate, state, useq, useat, upay, ugrace, alog, codes, pq, pqdraw, then one per limit (ops.go)
local m = tonumber(ARGV[2])
reqs_at(tonumber(ARGV[1]), 3 + 2 * m, 3, true, m, 3)
return enqueue_joins()
