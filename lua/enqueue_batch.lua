-- enqueue_batch.lua — several joins of one event in one call, in order:
-- each does and answers exactly what enqueue.lua would as a call of its
-- own in that order (the gateway's pipeliner sends the joins that arrive
-- together this way; lib.lua enqueue_joins says what is shared).
-- KEYS: the event key set (lib.lua)
--   reads:  active, config, rate, seq, state, ugrace, useq, waiting
--   writes: active, config, outbox, rate, seen, seq, state, ugrace, upay, useat, useq, waiting
--   and after them the abuse-limit keys of all the joins, each once
-- ARGV: 1 n (joins), 2 m (limits per join), then per limit slot its
--   interval_ms and burst (2m values), then per join m + 3 values:
--   user_id, now_ms, own (the slot, from 1, of the user's own limit; 0:
--   none), and per slot the number, from 1, of the join's limit key among
--   the keys after the event's
-- Replies: a list of n replies, each one of enqueue.lua's
local m = tonumber(ARGV[2])
reqs_at(tonumber(ARGV[1]), 3 + 2 * m, 3, true, m, 3)
return enqueue_joins()
