-- release_allocation: a channel's unsold allocated seats go back on sale (offered to the waitlist first), by the operator or at the release time.
-- ARGV: 1 channel, 2 'now' (the operator: at once) | 'due' (only once the channel's release time has passed, by Redis's clock)
-- Replies: {'ok', {seat ids back on sale}, now_ms} | {'not_due', release_at_ms (0: none set)}
--   | {'invalid_argument'} | {'event_not_found'}
-- KEYS: config, seats, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers, alloc (ops.go)
-- The allocation ends whole: seats allocated and unsold go on sale now;
-- seats of the channel a fan holds or bought lose their channel, so a
-- hold that ends or a sale cancelled puts them on sale (free_seat). The
-- release time ('ra:<channel>') and the channel's rows go too, so a
-- repeat changes nothing ({'ok', {}}). O(seats allocated to any channel):
-- an operator's call, or one per release time, never a fan's.
local ch, how = ARGV[1], ARGV[2]
if ch == '' or (how ~= 'now' and how ~= 'due') then return {'invalid_argument'} end
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local now = clock()
if how == 'due' then
  local at = num(redis.call('HGET', K_CONFIG, 'ra:' .. ch))
  if at <= 0 or at > now then return {'not_due', at} end
end
local all = redis.call('HGETALL', K_ALLOC)
local released, target = {}, 'c:' .. ch
for i = 1, #all, 2 do
  local seat, owner = all[i], all[i + 1]
  if owner == ch and string.sub(seat, 1, 1) ~= ' ' then
    redis.call('HDEL', K_ALLOC, seat)
    if redis.call('HGET', K_SEATS, seat) == target then
      redis.call('HSET', K_SEATS, seat, '')
      set_seat_status(seat, 'a')
      released[#released + 1] = seat
    end
  end
end
redis.call('HDEL', K_ALLOC, ' r:' .. ch)
redis.call('HDEL', K_CONFIG, 'ra:' .. ch)
if #released > 0 then
  redis.call('HINCRBY', K_CONFIG, 'allocated', -#released)
  waitlist_offer(table.concat(released, ','), now)
end
return {'ok', released, now}
