-- lock_seat: hold seats for an admitted user, all or none; selecting again replaces the selection.
-- ARGV: 1 user_id, 2 seat ids joined by ',' (at most max_seats), 3 channel (the token's claim; '' none),
--   4 '1': the fan asks for accessibility seats (the channels wheelchair and companion; '' no)
-- Replies: {'ok', seat_ids, deadline_ms} | {'not_found'} | {'invalid_state', state}
--   | {'hold_expired'} | {'seat_unknown', seat_id} | {'seat_unavailable', {taken seat ids}}
--   | {'seat_not_for_sale', {seat ids operators hold or killed, or allocated to a channel not the request's (mark_seats.lua)}}
--   | {'orphan_seat', {seats it would leave single}, {suggested seat ids}} (the no-orphan rule, lib/select.lua)
--   | {'too_many_seats', max} | {'invalid_argument'} (none, or one twice) | {'event_not_found'}
--   | {'sales_ended'} (the sale ended and the event's holds end with it)
-- KEYS: config, seats, seatmap, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, codes, runs, waitlist, offers, alloc (ops.go)
local user, csv, claim, accessible = ARGV[1], ARGV[2], ARGV[3] or '', ARGV[4] == '1'
local deadline, now, hnow = selecting_user(user)
if not deadline then return now end -- the error reply
if not hold_open_after_end(now) then return {'sales_ended'} end
local want = split_seats(csv)
if #want == 0 then return {'invalid_argument'} end
-- a redeemed access code may allow fewer than max_seats (lib/codes.lua)
local cmax = code_seats(user)
if cmax and #want > cmax then return {'too_many_seats', cmax} end
-- the request's channels: the token's signed claim and the event's
-- current phase (a presale phase is a channel)
local channels = {}
if claim ~= '' then channels[claim] = true end
local phase = redis.call('HGET', K_CONFIG, 'phase')
if phase and phase ~= '' then channels[phase] = true end
-- accessibility seats are allocated to the channels wheelchair and
-- companion: a fan who asks for them (no proof) is a request through both
if accessible then channels.wheelchair, channels.companion = true, true end
local reply, freed = hold_seats(user, want, csv, deadline, now, hnow, true, channels)
if reply[1] == 'ok' then offer_after_selection(user, freed, now) end
return reply
