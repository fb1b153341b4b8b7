-- rate_limit: count a request against its abuse limits (the library's limited).
-- ARGV: per limit its interval_ms and burst
-- Replies: {'ok'} (allowed and counted; an event that does not exist: not
--   counted) | {'rate_limited', retry_after_ms} (nothing changed)
-- KEYS: config, then one per limit (ops.go)
if redis.call('EXISTS', K_CONFIG) == 0 then return {'ok'} end
local now = clock()
local wait = limited(1, now)
if wait > 0 then return {'rate_limited', wait} end
return {'ok'}
