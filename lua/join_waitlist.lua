-- join_waitlist: join the waitlist of a sold-out event (or earlier, when waitlist_early is set). Idempotent.
-- ARGV: 1 user_id, 2 seats wanted (1..max_seats)
-- Replies: {'ok', 'waitlisted', sequence, position, seats, created (0|1), now_ms}
--   | {'ok', 'offered', sequence, 0, seats, 0, now_ms} (an offer is open)
--   | {'waitlist_disabled'} (offer_ms 0) | {'not_sold_out'} | {'sales_ended'}
--   | {'already_completed'} | {'invalid_state', state} (in the queue or the room)
--   | {'invalid_argument'} | {'event_not_found'}
-- KEYS: config, waiting, seq, outbox, state, waitlist, offers (ops.go)
-- Sold out: no seat is available (every seat sold, held, kept off sale
-- by the operators or allocated to a channel). A repeat answers the same sequence and the current
-- position; the 'w:' outbox entry (waitlist_joined) is written once.
local user, want = ARGV[1], tonumber(ARGV[2])
local c = redis.call('HMGET', K_CONFIG, 'total', 'sold', 'held', 'reserved', 'killed',
  'offer_ms', 'waitlist_early', 'sales_end_ms', 'max_seats', 'allocated')
if not c[1] then return {'event_not_found'} end
local now, now_s = clock()
local offer = redis.call('HGET', K_OFFERS, 'o:' .. user)
if offer then
  local s, seats = string.match(offer, '^([^|]*)|[^|]*|([^|]*)|')
  return {'ok', 'offered', tonumber(s), 0, #split_seats(seats), 0, now}
end
local score = redis.call('ZSCORE', K_WAITLIST, user)
if score then
  return {'ok', 'waitlisted', tonumber(score), redis.call('ZRANK', K_WAITLIST, user) + 1,
    num(redis.call('HGET', K_OFFERS, 'w:' .. user)), 0, now}
end
if num(c[6]) <= 0 then return {'waitlist_disabled'} end
local max = num(c[9])
if max <= 0 then max = 4 end
if not want or want < 1 or want > max or want ~= math.floor(want) then return {'invalid_argument'} end
local ends = num(c[8])
if ends > 0 and now > ends then return {'sales_ended'} end
local state = user_state(user)
if state == 'completed' then return {'already_completed'} end
if state == 'waiting' or state == 'active' or state == 'seat_selected' or state == 'payment_pending' then
  return {'invalid_state', state}
end
local available = num(c[1]) - num(c[2]) - num(c[3]) - num(c[4]) - num(c[5]) - num(c[10])
if available > 0 and c[7] ~= '1' then return {'not_sold_out'} end
local seq = redis.call('INCR', K_SEQ)
local s = int(seq)
redis.call('ZADD', K_WAITLIST, s, user)
redis.call('HSET', K_OFFERS, 'w:' .. user, int(want))
redis.call('HSET', K_OUTBOX, 'w:' .. s .. ':' .. user, s .. '|' .. int(want) .. '||' .. now_s)
return {'ok', 'waitlisted', seq, redis.call('ZRANK', K_WAITLIST, user) + 1, want, 1, now}
