-- seats.lua — every seat of an event with its status, in display order
-- (seed 002's TODO /api/seats/available). Read-only.
-- KEYS: the event key set (lib.lua).
-- ARGV: none
-- Replies: {'ok', {seat_id, ...}, {value, ...}} where value is '' (available),
--   'h:<user>' (held) or 's:<user>' (sold) | {'event_not_found'}
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local ids = redis.call('LRANGE', K_SEATMAP, 0, -1)
local vals = {}
local CHUNK = 500
for i = 1, #ids, CHUNK do
  local got = redis.call('HMGET', K_SEATS, unpack(ids, i, math.min(i + CHUNK - 1, #ids)))
  for _, v in ipairs(got) do vals[#vals + 1] = v or '' end
end
return {'ok', ids, vals}
