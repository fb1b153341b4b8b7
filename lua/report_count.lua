-- report_count: add one Kafka fact to its sale's report (pkg/report), at
-- most once per message id, so a redelivered or republished fact never
-- counts twice. Durations are counted when the second fact of a pair
-- arrives, whichever comes first (topics are not ordered among each other):
-- time in queue = user_promoted - booking_request, time to purchase =
-- booking_completed - user_promoted, of the same join sequence.
--
-- KEYS (all with the {report:<event_id>} hash tag: one Redis Cluster slot)
--   1 counts   hash  <type> -> facts; revenue:<currency> -> sum of amount
--   2 seen     string marker of the message id (EX ttl)
--   3 times    hash  j:<seq> / p:<seq> / c:<seq> -> occurred_ms of the
--                    join, admission, completion of join <seq>
--   4 queue    hash  bucket -> joins whose time in queue fell in it
--   5 purchase hash  bucket -> completions whose time to purchase fell in it
--   6 minutes  hash  unix minute -> admissions in it
-- ARGV
--   1 type, 2 sequence (0: none), 3 occurred_ms, 4 seen TTL seconds (> 0),
--   5 amount (0: none), 6 currency
-- Buckets: b = floor(4 * log2(ms + 1)), so bucket b spans
-- [2^(b/4) - 1, 2^((b+1)/4) - 1) ms (about 19% wide).
-- Replies: 1 counted | 0 duplicate (nothing changed)
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
