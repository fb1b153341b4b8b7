-- release_sold: the cancelled seats of a sold order go back on sale, each seat sold to the order's buyer becoming available.
-- ARGV: 1 user_id, 2 payment_id, then the seat ids
-- Replies: {'ok', released, {seat ids left as they were}} | {'event_not_found'}
-- KEYS: config, seats, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers, alloc (ops.go)
-- A seat is released only while it is sold to user and user's payment is
-- payment_id (the order's), so a repeat, or a seat sold again since,
-- changes nothing: the seat is listed as left. The buyer stays completed,
-- with the seats not released as their selection.
local user, pid = ARGV[1], ARGV[2]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local mine = redis.call('HGET', K_UPAY, user) == pid
local released, left, gone = 0, {}, {}
for i = 3, #ARGV do
  local seat = ARGV[i]
  if mine and redis.call('HGET', K_SEATS, seat) == 's:' .. user then
    free_seat(seat) -- (an allocated seat goes back to its channel)
    released = released + 1
    gone[seat] = true
  else
    left[#left + 1] = seat
  end
end
if released > 0 then
  redis.call('HINCRBY', K_CONFIG, 'sold', -released)
  local keep = {}
  for _, seat in ipairs(split_seats(redis.call('HGET', K_USEAT, user))) do
    if not gone[seat] then keep[#keep + 1] = seat end
  end
  redis.call('HSET', K_USEAT, user, table.concat(keep, ','))
  local back = {}
  for i = 3, #ARGV do
    if gone[ARGV[i]] then back[#back + 1] = ARGV[i]; gone[ARGV[i]] = nil end
  end
  waitlist_offer(table.concat(back, ','), clock())
end
return {'ok', released, left}
