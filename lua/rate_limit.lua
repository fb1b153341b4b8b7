-- rate_limit.lua — count a request against its abuse limits (booking.Limit)
-- where the operation's own script does not check them (enqueue and
-- get_position do, in the same call).
-- KEYS: the event key set (lib.lua)
--   reads:  config
--   writes: (none)
--   and after them the abuse-limit keys, one per limit (lib.lua limited)
-- ARGV: 1 now_ms, then per limit its interval_ms and burst
-- Replies:
--   {'ok'}: allowed and counted, or the event does not exist (not counted:
--     no keys for events that are not there; the operation answers for it)
--   {'rate_limited', retry_after_ms}: refused (nothing changed)
local now = tonumber(ARGV[1])
if redis.call('EXISTS', K_CONFIG) == 0 then return {'ok'} end
local wait = limited(2, now)
if wait > 0 then return {'rate_limited', wait} end
return {'ok'}
