-- box_office_sale: an operator sells seats at the counter: sold at once to the sale's buyer, all or none; a repeat of the sale answers what it sold.
-- ARGV: 1 buyer user_id (booking.BoxOfficeBuyer), 2 payment_id (the sale's), 3 channel,
--   4 seat ids joined by ',' ('': pick count seats, best available), 5 count, 6 section name ('': any),
--   7 the operator who sells, 8 the customer's reference, 9 the admin call's audit intent
--   (operators.Intent's id, '' none: whoever records the sale's order removes it)
-- Replies: {'ok', 'completed' | 'duplicate', seat_ids, at_ms, sold_out_ms, amount_cents, seat_prices, phase, currency,
--   record ('': a duplicate whose order the ledger has)}
--   | {'seat_unknown', seat_id} | {'seat_unavailable', {taken seat ids}}
--   | {'seat_not_for_sale', {seat ids operators hold or killed, or allocated to another channel}}
--   | {'too_many_seats', max} | {'section_unknown'} | {'no_adjacent_seats', largest, available}
--   | {'invalid_argument'} (no seat, one twice, or the buyer is no box-office buyer of this sale)
--   | {'event_not_found'} | {'sales_ended'}
-- KEYS: config, seats, seatmap, waiting, state, useq, useat, upay, pays, status, seatidx, runs, alloc, boxsales (ops.go)
-- The seats go through the checks of a fan's selection (lib/select.lua
-- seats_refusal) and are written sold in the same step, so a seat is
-- either this sale's or a fan's hold, never both. The channel's own
-- seats and general sale may be taken; a seat allocated to another
-- channel, held or killed is not for sale. The sales window's end
-- applies; its start does not (a box office sells its allocation before
-- the public sale opens). The buyer is recorded completed with the sale's
-- payment id, as a restored buyer is (restore_event.lua), so the order's
-- cancellation (release_sold.lua) and a rebuild treat it as any order.
-- The same step writes the sale's record to boxsales (pid -> JSON of
-- what the ledger's order needs), removed once the ledger has the order
-- (booking.Store.BoxOfficeSaleRecorded): a sale whose ledger write failed
-- stays there for the sweep (ledger.BoxOfficeSweeper), so it is never
-- sold in Redis alone.
local user, pid, channel, csv, count, section = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]) or 0, ARGV[6] or ''
local sold_by, customer_ref, intent = ARGV[7] or '', ARGV[8] or '', ARGV[9] or ''
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local now, now_s = clock()
local phase = redis.call('HGET', K_CONFIG, 'phase') or ''
local prev = redis.call('HGET', K_PAYS, pid)
if prev then
  local p = payment_record(user, pid)
  if not p or p.user ~= user or p.status ~= 'completed' then return {'invalid_argument'} end
  return {'ok', 'duplicate', p.seat, p.at, num(redis.call('HGET', K_CONFIG, 'sold_out_at')),
    order_amount(p.seat), seat_prices(p.seat), phase, redis.call('HGET', K_CONFIG, 'currency') or '',
    redis.call('HGET', K_BOXSALES, pid) or ''}
end
if user_state(user) then return {'invalid_argument'} end
if sales_ended(now, redis.call('HGET', K_CONFIG, 'sales_end_ms')) then return {'sales_ended'} end
local max = tonumber(redis.call('HGET', K_CONFIG, 'max_seats')) or 4
local channels = {[channel] = true}
local want
if csv ~= '' then
  want = split_seats(csv)
else
  if count < 1 or count ~= math.floor(count) then return {'invalid_argument'} end
  if count > max then return {'too_many_seats', max} end
  ensure_runs()
  local r0, r1 = section_rows(section)
  if not r0 then return {'section_unknown'} end
  local pos, orphaned = best_in_channels(count, channels, r0, r1)
  if not pos or orphaned then
    local p2, o2 = best_place(count, r0, r1, true, true)
    if p2 and (not pos or not o2) then pos = p2 end
  end
  if not pos then
    local c = redis.call('HMGET', K_CONFIG, 'total', 'held', 'sold', 'reserved', 'killed', 'allocated')
    return {'no_adjacent_seats', largest_run(count, r0, r1),
      num(c[1]) - num(c[2]) - num(c[3]) - num(c[4]) - num(c[5]) - num(c[6])}
  end
  want = seats_at(pos, count)
  csv = table.concat(want, ',')
end
if #want == 0 then return {'invalid_argument'} end
if #want > max then return {'too_many_seats', max} end
local vals, refusal = seats_refusal(want, channels, 's:' .. user, now)
if not vals then return refusal end
local n = take_seats(want, vals, channels, 's:' .. user, 's')
local sold = redis.call('HINCRBY', K_CONFIG, 'sold', n)
if sold >= num(redis.call('HGET', K_CONFIG, 'total')) then
  redis.call('HSETNX', K_CONFIG, 'sold_out_at', now_s)
end
redis.call('HSET', K_STATE, user, 'completed')
redis.call('HSET', K_USEAT, user, csv)
redis.call('HSET', K_UPAY, user, pid)
redis.call('HSET', K_USEQ, user, 0)
redis.call('HSET', K_PAYS, pid, user .. '|0|' .. csv .. '|completed|' .. now_s)
local sold_out, amount, prices = num(redis.call('HGET', K_CONFIG, 'sold_out_at')), order_amount(csv), seat_prices(csv)
local currency = redis.call('HGET', K_CONFIG, 'currency') or ''
local record = cjson.encode({user = user, seats = csv, at = now_s, sold_out = int(sold_out), amount = int(amount),
  prices = prices, phase = phase, currency = currency, channel = channel, sold_by = sold_by, customer_ref = customer_ref,
  intent = intent})
redis.call('HSET', K_BOXSALES, pid, record)
return {'ok', 'completed', csv, now, sold_out, amount, prices, phase, currency, record}
