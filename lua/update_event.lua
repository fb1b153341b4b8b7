-- update_event.lua — change a live event (pause/resume, capacity, hold,
-- abandonment, and any other setting an operator may need to repair).
-- Switching abandonment on (abandon_ms from 0 to more) records when, as
-- abandon_since_ms: a waiting user with no presence entry (joined while it
-- was off) counts as present from that moment (promote.lua).
-- KEYS: the event key set (lib.lua)
--   reads:  config
--   writes: config
-- ARGV: field, value pairs; fields limited to paused, capacity, hold_ms, abandon_ms,
--       name, grace_ms, batch, sales_start_ms, sales_end_ms, max_seats,
--       admit_per_minute (0 = no rate cap; takes effect at the next
--       admission), early_join_ms, draw_seed, draw_commit (the pre-queue;
--       draw_seed and draw_commit are set only when the event has no seed
--       yet: a seed once committed to is never replaced; drawn = 1
--       once the draw is published), challenge ('none' | 'pow') (the caller
--       validates values), and now_ms (the time of the change, not stored;
--       needed to switch abandonment on).
-- Replies: {'ok'} | {'event_not_found'} | {'invalid_argument'}
if redis.call('EXISTS', K_CONFIG) == 0 then
  return {'event_not_found'}
end
local allowed = {paused = true, capacity = true, hold_ms = true, abandon_ms = true,
  name = true, grace_ms = true, batch = true, sales_start_ms = true, sales_end_ms = true,
  max_seats = true, admit_per_minute = true, early_join_ms = true, draw_seed = true, draw_commit = true,
  drawn = true, challenge = true}
local seeded = redis.call('HEXISTS', K_CONFIG, 'draw_seed') == 1
local set, now, abandon = {}, nil, nil
for i = 1, #ARGV, 2 do
  local f, v = ARGV[i], ARGV[i + 1]
  if v == nil then return {'invalid_argument'} end
  if f == 'now_ms' then
    now = v
  elseif (f == 'draw_seed' or f == 'draw_commit') and seeded then
    -- keep the seed (and commitment) already published
  elseif allowed[f] then
    set[#set + 1] = f
    set[#set + 1] = v
    if f == 'abandon_ms' then abandon = tonumber(v) end
  else
    return {'invalid_argument'}
  end
end
if abandon and abandon > 0 and now and num(redis.call('HGET', K_CONFIG, 'abandon_ms')) <= 0 then
  set[#set + 1] = 'abandon_since_ms'
  set[#set + 1] = now
end
if #set > 0 then
  redis.call('HSET', K_CONFIG, unpack(set))
end
return {'ok'}
