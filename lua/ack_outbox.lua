-- ack_outbox: settle announced outbox entries, each only if unchanged since read.
-- ARGV: field, value as read, new value ('' = remove) triples
-- Replies: {'ok', settled}
-- KEYS: outbox (ops.go)
-- The entries' values are read with one HMGET and the removed ones go in
-- one HDEL (a relay's batch is hundreds of join facts): a call settles
-- each entry as if one at a time, in order, a field given twice seeing
-- what the first settling left.
local n = #ARGV / 3
local fields, del, nd, settled = {}, {}, 0, 0
for i = 1, n do fields[i] = ARGV[3 * i - 2] end
local cur = {}
for a = 1, n, 1000 do
  local part = redis.call('HMGET', K_OUTBOX, unpack(fields, a, math.min(a + 999, n)))
  for b = 1, #part do cur[a + b - 1] = part[b] end
end
local after = {} -- a field's value once an earlier entry of the call was settled (false: removed)
for i = 1, n do
  local f, new = fields[i], ARGV[3 * i]
  local v = after[f]
  if v == nil then v = cur[i] end
  if v == ARGV[3 * i - 1] then
    if new == '' then
      nd = nd + 1
      del[nd] = f
      after[f] = false
    else
      redis.call('HSET', K_OUTBOX, f, new)
      after[f] = new
    end
    settled = settled + 1
  end
end
if nd > 0 then bulk('HDEL', K_OUTBOX, del, nd) end
return {'ok', settled}
