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
local n, m = tonumber(ARGV[1]), tonumber(ARGV[2])
local steps, bursts = {}, {}
for s = 1, m do
  steps[s], bursts[s] = tonumber(ARGV[1 + 2 * s]), tonumber(ARGV[2 + 2 * s])
end
local joins, at = {}, 3 + 2 * m
for i = 1, n do
  local keys = {}
  for s = 1, m do keys[s] = tonumber(ARGV[at + 2 + s]) end
  joins[i] = {user = ARGV[at], now = tonumber(ARGV[at + 1]), now_s = ARGV[at + 1], own = num(ARGV[at + 2]), keys = keys}
  at = at + 3 + m
end
return enqueue_joins(joins, steps, bursts)
