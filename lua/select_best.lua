-- select_best: hold the best count adjacent seats for an admitted user (best available), as lock_seat would.
-- ARGV: 1 user_id, 2 count, 3 section name ('': any section), 4 channel (the token's claim; '' none),
--   5 '1': the fan asks for accessibility seats (the channels wheelchair and companion; '' no)
-- Replies: {'ok', seat_ids, deadline_ms, orphaned} (orphaned 1: it leaves a single free seat,
--   no other choice fitting) | {'not_found'} | {'invalid_state', state} | {'hold_expired'}
--   | {'too_many_seats', max} | {'section_unknown'} | {'no_adjacent_seats', largest, available}
--   | {'invalid_argument'} | {'event_not_found'} | {'sales_ended'} (holds end with the sale)
-- KEYS: config, seats, seatmap, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, codes, runs, waitlist, offers, alloc (ops.go)
-- The best seats: the first row (the event's section order, then row
-- order) with count adjacent free seats, nearest its centre
-- (lib/select.lua best_place); found through the index of free runs
-- (lib/rows.lua), O(row length). largest is the most adjacent seats
-- still free together in the section, available the seats on sale.
-- A request through a channel (the token's claim, the current phase) looks first in the seats allocated to it
-- (best_in_channels, O(row length) per row of the allocation), then in
-- general sale.
local user, count, section, claim = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] or ''
local accessible = ARGV[5] == '1'
local deadline, now, hnow = selecting_user(user)
if not deadline then return now end -- the error reply
if not hold_open_after_end(now) then return {'sales_ended'} end
if not count or count < 1 or count ~= math.floor(count) then return {'invalid_argument'} end
local max = tonumber(redis.call('HGET', K_CONFIG, 'max_seats')) or 4
local cmax = code_seats(user) -- a redeemed access code may allow fewer (lib/codes.lua)
if cmax and cmax < max then max = cmax end
if count > max then return {'too_many_seats', max} end
ensure_runs()
local r0, r1 = section_rows(section)
if not r0 then return {'section_unknown'} end
-- the request's channels: the token's signed claim and the event's
-- current phase (a presale phase is a channel)
local channels = {}
if claim ~= '' then channels[claim] = true end
local phase = redis.call('HGET', K_CONFIG, 'phase')
if phase and phase ~= '' then channels[phase] = true end
-- a fan who asks for accessibility seats: the channels wheelchair and
-- companion (their seats first, then general sale)
if accessible then channels.wheelchair, channels.companion = true, true end
local pos, orphaned
if next(channels) then pos, orphaned = best_in_channels(count, channels, r0, r1) end
if not pos or orphaned then
  local p2, o2 = best_place(count, r0, r1, true, true)
  if p2 and (not pos or not o2) then pos, orphaned = p2, o2 end
end
if not pos then
  local c = redis.call('HMGET', K_CONFIG, 'total', 'held', 'sold', 'reserved', 'killed', 'allocated')
  return {'no_adjacent_seats', largest_run(count, r0, r1),
    num(c[1]) - num(c[2]) - num(c[3]) - num(c[4]) - num(c[5]) - num(c[6])}
end
local want = seats_at(pos, count)
local reply, freed = hold_seats(user, want, table.concat(want, ','), deadline, now, hnow, false, channels)
if reply[1] == 'ok' then
  reply[4] = orphaned and 1 or 0
  offer_after_selection(user, freed, now)
end
return reply
