-- load_waitlist: put a rebuilt event's waitlist back from the ledger, then offer its free seats to it in order.
-- ARGV: 3 per fan: user_id, join sequence, seats wanted
-- Replies: {'ok', restored, offers_made, now_ms} | {'event_not_found'} | {'invalid_argument'}
-- KEYS: config, seats, seatmap, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers (ops.go)
-- Each fan keeps their join sequence, so the order is the one they
-- joined in and fans joining after the rebuild (sequences from the
-- rebuild's base) come after them. A fan already on the waitlist, with an
-- open offer, in the queue or the room, or a buyer is skipped; no
-- waitlist_joined entry is written again. The seats free after the
-- rebuild (holds and open offers are gone with Redis) are returned seats:
-- the waitlist's head gets them first, as waitlist_offer gives any.
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
if #ARGV % 3 ~= 0 then return {'invalid_argument'} end
for i = 1, #ARGV, 3 do
  local s, want = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if ARGV[i] == '' or not s or s < 1 or not want or want < 1 then return {'invalid_argument'} end
end
local now, now_s = clock()
local restored = 0
for i = 1, #ARGV, 3 do
  local user, s, want = ARGV[i], int(tonumber(ARGV[i + 1])), int(tonumber(ARGV[i + 2]))
  if not redis.call('ZSCORE', K_WAITLIST, user) and not redis.call('HGET', K_OFFERS, 'o:' .. user)
    and waitlist_eligible(user) then
    redis.call('ZADD', K_WAITLIST, s, user)
    redis.call('HSET', K_OFFERS, 'w:' .. user, want)
    restored = restored + 1
  end
end
-- every seat in seat map order (waitlist_offer takes the free ones), so
-- the offers are the same on every rebuild
local made = 0
if redis.call('ZCARD', K_WAITLIST) > 0 then
  made = waitlist_offer(table.concat(redis.call('LRANGE', K_SEATMAP, 0, -1), ','), now, now_s)
end
return {'ok', restored, made, now}
