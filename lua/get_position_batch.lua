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
local n, m = tonumber(ARGV[1]), tonumber(ARGV[2])
local steps, bursts = {}, {}
for s = 1, m do
  steps[s], bursts[s] = tonumber(ARGV[1 + 2 * s]), tonumber(ARGV[2 + 2 * s])
end
local reqs, at = {}, 3 + 2 * m
for i = 1, n do
  local keys = {}
  for s = 1, m do keys[s] = tonumber(ARGV[at + 1 + s]) end
  reqs[i] = {user = ARGV[at], now = tonumber(ARGV[at + 1]), now_s = ARGV[at + 1], keys = keys}
  at = at + 2 + m
end
return read_positions(reqs, steps, bursts)
