-- answer_offer: a fan accepts or declines their open offer. Idempotent.
-- ARGV: 1 user_id, 2 offer sequence, 3 'accept' | 'decline'
-- Replies: {'ok', outcome, seat_ids, deadline_ms, duplicate (0|1), offers_made, now_ms}
--   outcome 'accepted' (the hold stays, for the normal checkout; deadline_ms
--   its deadline) | 'declined' (the seats go to the next waitlisted fan)
--   | {'offer_not_found'} | {'not_your_offer'} | {'offer_expired'}
--   | {'offer_closed', outcome} (answered otherwise, or ended)
--   | {'invalid_argument'} | {'event_not_found'}
-- KEYS: config, seats, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers, alloc (ops.go)
-- Nothing changes on an error. An offer whose deadline passed is expired
-- even before its timeout ended the hold. A repeat of the same answer is
-- 'ok' with duplicate 1.
local user, seq, action = ARGV[1], tonumber(ARGV[2]), ARGV[3]
if action ~= 'accept' and action ~= 'decline' then return {'invalid_argument'} end
if not seq or seq < 1 then return {'invalid_argument'} end
local now, now_s = clock()
local hnow = event_hold_clock(now)
if not hnow then return {'event_not_found'} end
local s = int(seq)
local v = redis.call('HGET', K_OFFERS, 'o:' .. user)
local open = v and string.match(v, '^([^|]*)|') == s
if not open then
  local owner = redis.call('HGET', K_OFFERS, 's:' .. s)
  if owner and owner ~= user then return {'not_your_offer'} end
  local ended = redis.call('HGET', K_OUTBOX, 'e:' .. s .. ':' .. user)
  local outcome = ended and string.match(ended, '^[^|]*|([^|]*)|')
  if not outcome and num(redis.call('HGET', K_USEQ, user)) == seq then
    local st = redis.call('HGET', K_STATE, user)
    if st == 'seat_selected' or st == 'payment_pending' or st == 'completed' or st == 'failed' then
      outcome = 'accepted'
    elseif st == 'cancelled' then
      outcome = 'declined'
    elseif st == 'expired' then
      outcome = 'expired'
    end
  end
  if not outcome then return {'offer_not_found'} end
  if (outcome == 'accepted' and action == 'accept') or (outcome == 'declined' and action == 'decline') then
    local dl = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
    if dl then dl = dl + now - hnow else dl = 0 end
    return {'ok', outcome, redis.call('HGET', K_USEAT, user) or '', dl, 1, 0, now}
  end
  return {'offer_closed', outcome}
end
local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
if not deadline or deadline <= hnow then return {'offer_expired'} end
if action == 'accept' then
  close_offer(user, 'accepted', now_s)
  return {'ok', 'accepted', redis.call('HGET', K_USEAT, user) or '', deadline + now - hnow, 0, 0, now}
end
local seats = release_hold(user, 'cancelled')
close_offer(user, 'declined', now_s)
local made = waitlist_offer(seats, now, now_s)
return {'ok', 'declined', seats, 0, 0, made, now}
