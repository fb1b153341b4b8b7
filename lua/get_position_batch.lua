-- get_position_batch.lua — several position reads of one event in one
-- call, in order: each answers exactly what get_position.lua would as a
-- call of its own in that order (the gateway's pipeliner sends the reads
-- that arrive together this way; lib.lua read_positions says what is
-- shared).
-- KEYS: the event key set (lib.lua)
--   reads:  active, config, rate, state, upay, useat, useq, waiting
--   writes: seen
--   and after them the abuse-limit keys of all the reads, each once
-- ARGV: 1 n (reads), 2 m (limits per read), then per limit slot its
--   interval_ms and burst (2m values), then per read m + 2 values:
--   user_id, now_ms, and per slot the number, from 1, of the read's limit
--   key among the keys after the event's
-- Replies: a list of n replies, each one of get_position.lua's
local m = tonumber(ARGV[2])
reqs_at(tonumber(ARGV[1]), 3 + 2 * m, 2, true, m, 3)
return read_positions()
