-- update_event.lua — change a live event (pause/resume, capacity, hold,
-- abandonment, and any other setting an operator may need to repair).
-- KEYS: the event key set (lib.lua).
-- ARGV: field, value pairs; fields limited to paused, capacity, hold_ms, abandon_ms,
--       name, grace_ms, batch, sales_start_ms, sales_end_ms (the caller validates values).
-- Replies: {'ok'} | {'event_not_found'} | {'invalid_argument'}
if redis.call('EXISTS', K_CONFIG) == 0 then
  return {'event_not_found'}
end
local allowed = {paused = true, capacity = true, hold_ms = true, abandon_ms = true,
  name = true, grace_ms = true, batch = true, sales_start_ms = true, sales_end_ms = true}
for i = 1, #ARGV, 2 do
  if not allowed[ARGV[i]] or ARGV[i + 1] == nil then
    return {'invalid_argument'}
  end
end
if #ARGV > 0 then
  redis.call('HSET', K_CONFIG, unpack(ARGV))
end
return {'ok'}
