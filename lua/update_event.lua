-- update_event: change a live event's settings (not its seat map).
-- ARGV: field, value pairs (paused, capacity, hold_ms, abandon_ms, name,
--   grace_ms, batch, sales_start_ms, sales_end_ms, max_seats,
--   admit_per_minute, early_join_ms, draw_seed, draw_commit, drawn,
--   challenge, no_orphans, finish_after_end, refundable_until_ms, offer_ms,
--   waitlist_early, schedule, phase_leave, sched_slot, restore_pending (a
--   rebuild's steps after restore_event still to run), and a later phase's
--   draw seed and commitment 'pq_seed:<phase>', 'pq_commit:<phase>')
--   A change the ledger records (ledger.Ledger.UpdateEvent, in the
--   transaction that holds the event's row) also gives 'settings_rev',
--   the revision it will have once committed: the fields it sets are
--   kept with their old values (config settings_rev, settings_undo) until
--   the ledger is known to have it. An earlier change whose revision the
--   ledger does not have (its transaction rolled back after this script
--   ran) is undone first. 'settings_committed', the ledger's revision,
--   alone does only that (the reconciliation). Undoing puts back a
--   field's old value only where the field still has the value the lost
--   change gave it; the draws' seeds and commitments are never undone.
--   A lost schedule's 'sched_slot' goes back too, or, when a tick has
--   applied one of its slots since, becomes '' (none applied): the next
--   apply_schedule then makes the restored schedule's phase current.
-- Replies: {'ok', undone field...} | {'event_not_found'} | {'invalid_argument'}
-- KEYS: config (ops.go)
if redis.call('EXISTS', K_CONFIG) == 0 then
  return {'event_not_found'}
end
-- the change kept for undoing, if its revision is after the ledger's
local function settle(committed)
  local c = redis.call('HMGET', K_CONFIG, 'settings_rev', 'settings_undo')
  if not c[1] then return {} end
  local undone = {}
  if num(c[1]) > committed then
    local slot
    for _, e in ipairs(cjson.decode(c[2])) do
      if e[1] == 'sched_slot' then
        slot = e
      elseif redis.call('HGET', K_CONFIG, e[1]) == e[3] then
        if e[2] then
          redis.call('HSET', K_CONFIG, e[1], e[2])
        else
          redis.call('HDEL', K_CONFIG, e[1])
        end
        undone[#undone + 1] = e[1]
      end
    end
    if slot then
      -- a lost schedule: the slot applied before it, unless a tick has
      -- applied one of the lost schedule's since; then none, so the next
      -- tick makes the restored schedule's phase current again
      local v = slot[2]
      if redis.call('HGET', K_CONFIG, 'sched_slot') ~= slot[3] then v = '' end
      if v then
        redis.call('HSET', K_CONFIG, 'sched_slot', v)
      else
        redis.call('HDEL', K_CONFIG, 'sched_slot')
      end
      undone[#undone + 1] = 'sched_slot'
    end
  end
  redis.call('HDEL', K_CONFIG, 'settings_rev', 'settings_undo')
  return undone
end
local allowed = {paused = true, capacity = true, hold_ms = true, abandon_ms = true,
  name = true, grace_ms = true, batch = true, sales_start_ms = true, sales_end_ms = true,
  max_seats = true, admit_per_minute = true, early_join_ms = true, draw_seed = true, draw_commit = true,
  drawn = true, challenge = true, no_orphans = true, finish_after_end = true,
  refundable_until_ms = true, offer_ms = true, waitlist_early = true, schedule = true, phase_leave = true,
  sched_slot = true, restore_pending = true}
local seeded = redis.call('HEXISTS', K_CONFIG, 'draw_seed') == 1
local set, abandon, rev, committed = {}, nil, nil, nil
for i = 1, #ARGV, 2 do
  local f, v = ARGV[i], ARGV[i + 1]
  if v == nil then return {'invalid_argument'} end
  local phase_seed = string.sub(f or '', 1, 8) == 'pq_seed:' or string.sub(f or '', 1, 10) == 'pq_commit:'
  if f == 'settings_rev' or f == 'settings_committed' then
    local r = tonumber(v)
    if not r or r ~= math.floor(r) or r < 0 or (f == 'settings_rev' and r < 1) then return {'invalid_argument'} end
    if f == 'settings_rev' then rev, committed = r, r - 1 else committed = r end
  elseif (f == 'draw_seed' or f == 'draw_commit') and seeded then
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
local undone = {}
if committed then undone = settle(committed) end
if abandon and abandon > 0 and num(redis.call('HGET', K_CONFIG, 'abandon_ms')) <= 0 then
  set[#set + 1] = 'abandon_since_ms'
  local _, now = clock()
  set[#set + 1] = now
end
if rev then
  local undo = {}
  for i = 1, #set, 2 do
    local f = set[i]
    if f ~= 'draw_seed' and f ~= 'draw_commit' and string.sub(f, 1, 3) ~= 'pq_' then
      undo[#undo + 1] = {f, redis.call('HGET', K_CONFIG, f) or false, set[i + 1]}
    end
  end
  set[#set + 1] = 'settings_rev'
  set[#set + 1] = int(rev)
  set[#set + 1] = 'settings_undo'
  set[#set + 1] = cjson.encode(undo)
end
if #set > 0 then
  redis.call('HSET', K_CONFIG, unpack(set))
end
return {'ok', unpack(undone)}
