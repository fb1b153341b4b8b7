-- report_count: add one Kafka fact to its sale's report, once per message id.
-- ARGV: 1 type, 2 sequence (0: none), 3 occurred_ms, 4 seen TTL seconds (> 0),
--   5 amount (0: none), 6 currency
-- Replies: 1 counted | 0 duplicate (nothing changed)
-- KEYS: 1 counts, 2 seen, 3 times, 4 queue, 5 purchase, 6 minutes (ops.go)
local typ, seq, at, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ttl) then return 0 end
redis.call('HINCRBY', KEYS[1], typ, 1)
local amount = tonumber(ARGV[5])
if typ == 'booking_completed' and amount and amount > 0 and ARGV[6] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'revenue:' .. ARGV[6], amount)
end
if typ == 'payment_late' and amount and amount > 0 and ARGV[6] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'refunds:' .. ARGV[6], amount)
end
local function bucket(key, from, to)
  local d = tonumber(to) - tonumber(from)
  if d < 0 then d = 0 end
  redis.call('HINCRBY', key, math.floor(4 * math.log(d + 1) / math.log(2)), 1)
end
if seq == '0' then return 1 end
local function pair(mine, other, key, other_first)
  redis.call('HSETNX', KEYS[3], mine .. ':' .. seq, at)
  local t = redis.call('HGET', KEYS[3], other .. ':' .. seq)
  if t then
    if other_first then bucket(key, t, at) else bucket(key, at, t) end
  end
end
if typ == 'booking_request' then
  pair('j', 'p', KEYS[4], false)
elseif typ == 'user_promoted' then
  redis.call('HINCRBY', KEYS[6], math.floor(at / 60000), 1)
  pair('p', 'j', KEYS[4], true)
  pair('p', 'c', KEYS[5], false)
elseif typ == 'booking_completed' then
  pair('c', 'p', KEYS[5], true)
end
return 1
