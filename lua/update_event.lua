-- update_event: change a live event's settings (not its seat map).
-- ARGV: field, value pairs (paused, capacity, hold_ms, abandon_ms, name,
--   grace_ms, batch, sales_start_ms, sales_end_ms, max_seats,
--   admit_per_minute, early_join_ms, draw_seed, draw_commit, drawn,
--   challenge, no_orphans, finish_after_end, refundable_until_ms, offer_ms,
--   waitlist_early, schedule, phase_leave, sched_slot, restore_pending (a
--   rebuild's steps after restore_event still to run), and a later phase's
--   draw seed and commitment 'pq_seed:<phase>', 'pq_commit:<phase>')
-- Replies: {'ok'} | {'event_not_found'} | {'invalid_argument'}
-- KEYS: config (ops.go)
if redis.call('EXISTS', K_CONFIG) == 0 then
  return {'event_not_found'}
end
local allowed = {paused = true, capacity = true, hold_ms = true, abandon_ms = true,
  name = true, grace_ms = true, batch = true, sales_start_ms = true, sales_end_ms = true,
  max_seats = true, admit_per_minute = true, early_join_ms = true, draw_seed = true, draw_commit = true,
  drawn = true, challenge = true, no_orphans = true, finish_after_end = true,
  refundable_until_ms = true, offer_ms = true, waitlist_early = true, schedule = true, phase_leave = true,
  sched_slot = true, restore_pending = true}
local seeded = redis.call('HEXISTS', K_CONFIG, 'draw_seed') == 1
local set, abandon = {}, nil
for i = 1, #ARGV, 2 do
  local f, v = ARGV[i], ARGV[i + 1]
  if v == nil then return {'invalid_argument'} end
  local phase_seed = string.sub(f or '', 1, 8) == 'pq_seed:' or string.sub(f or '', 1, 10) == 'pq_commit:'
  if (f == 'draw_seed' or f == 'draw_commit') and seeded then
    -- keep the seed (and commitment) already published
  elseif phase_seed then
    -- likewise a phase's: set once (lib/draw.lua)
    if redis.call('HEXISTS', K_CONFIG, f) == 0 then
      set[#set + 1] = f
      set[#set + 1] = v
    end
  elseif allowed[f] then
    set[#set + 1] = f
    set[#set + 1] = v
    if f == 'abandon_ms' then abandon = tonumber(v) end
  else
    return {'invalid_argument'}
  end
end
if abandon and abandon > 0 and num(redis.call('HGET', K_CONFIG, 'abandon_ms')) <= 0 then
  set[#set + 1] = 'abandon_since_ms'
  local _, now = clock()
  set[#set + 1] = now
end
if #set > 0 then
  redis.call('HSET', K_CONFIG, unpack(set))
end
return {'ok'}
