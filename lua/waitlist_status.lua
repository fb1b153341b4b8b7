-- waitlist_status: a user's place on the waitlist or their open offer.
-- ARGV: 1 user_id
-- Replies: {'ok', 'waitlisted', sequence, position, seats, waitlisted_count, 0, '', fans_offered, window_ms, ended, now_ms}
--   | {'ok', 'offered', sequence, 0, seats wanted, waitlisted_count, deadline_ms, seat_ids, 0, 0, ended, now_ms}
--   | {'not_found'} | {'event_not_found'}
-- fans_offered, window_ms: the waitlist's pace (lib/waitlist.lua
-- offer_pace), fans offered seats in the last window_ms; ended: 1 once
-- the sales end passed (no offer is made after it).
-- KEYS: config, waitlist, offers (ops.go)
-- position: 1 is next. Reads only: O(log n).
local user = ARGV[1]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local now = clock()
local count = redis.call('ZCARD', K_WAITLIST)
local ended = 0
if sales_ended(now, redis.call('HGET', K_CONFIG, 'sales_end_ms')) then ended = 1 end
local offer = redis.call('HGET', K_OFFERS, 'o:' .. user)
if offer then
  local s, d, seats = string.match(offer, '^([^|]*)|([^|]*)|([^|]*)|')
  return {'ok', 'offered', tonumber(s), 0, #split_seats(seats), count, tonumber(d), seats, 0, 0, ended, now}
end
local score = redis.call('ZSCORE', K_WAITLIST, user)
if not score then return {'not_found'} end
local fans, window = offer_pace(now)
return {'ok', 'waitlisted', tonumber(score), redis.call('ZRANK', K_WAITLIST, user) + 1,
  num(redis.call('HGET', K_OFFERS, 'w:' .. user)), count, 0, '', fans, window, ended, now}
