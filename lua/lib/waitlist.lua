-- waitlist.lua: the waitlist of a sold-out event and its time-limited offers
-- (docs/booking-engine.md "The waitlist").
--
-- waitlist (zset): waitlisted user -> join sequence (from seq, so it never
-- repeats a queue join's); offers (hash): 'w:<user>' -> seats wanted by a
-- waitlisted user, 'o:<user>' -> 'seq|deadline_ms|seats|at_ms' an open
-- offer, 's:<seq>' -> its user. An offer is a hold: the seats are
-- 'h:<user>', the user seat_selected with the offer's sequence in useq
-- and its deadline (offer_ms on) in active, so the hold's timeout message
-- and promotion's reclaim end it like any hold, and paying for it is the
-- normal checkout. Outbox entries: 'w:<seq>:<user>' -> 'seq|seats||at_ms'
-- (waitlist_joined), 'o:<seq>:<user>' -> the offer's value (offer_made),
-- 'e:<seq>:<user>' -> 'seq|outcome|seats|at_ms', outcome accepted,
-- declined or expired (the offer's end).

-- The pace of the waitlist (waitlist_status's estimate): fans offered
-- seats per minute over the last OFFER_RATE_MINUTES minutes, in as many
-- slots 'r:<minute mod OFFER_RATE_MINUTES>' -> 'minute|fans' of offers,
-- and 'r:first' -> when the first offer was made (ms).
local OFFER_RATE_MINUTES = 10

-- Counts n fans offered seats at now.
local function count_offers(now, n)
  local m = math.floor(now / 60000)
  local f = 'r:' .. int(m % OFFER_RATE_MINUTES)
  local v = redis.call('HGET', K_OFFERS, f)
  local c = 0
  if v then
    local vm, vc = string.match(v, '^(%d+)|(%d+)$')
    if tonumber(vm) == m then c = tonumber(vc) end
  end
  redis.call('HSET', K_OFFERS, f, int(m) .. '|' .. int(c + n))
  redis.call('HSETNX', K_OFFERS, 'r:first', int(now))
end

-- Fans offered seats in the window ending at now, and the window's
-- length in ms: since the start of the oldest minute counted, or since
-- the first offer when that is later (0 fans, 0 ms: no offer yet).
local function offer_pace(now)
  local m = math.floor(now / 60000)
  local fans = 0
  for i = 0, OFFER_RATE_MINUTES - 1 do
    local v = redis.call('HGET', K_OFFERS, 'r:' .. int(i))
    if v then
      local vm, vc = string.match(v, '^(%d+)|(%d+)$')
      vm = tonumber(vm)
      if vm and vm > m - OFFER_RATE_MINUTES and vm <= m then fans = fans + tonumber(vc) end
    end
  end
  local first = tonumber(redis.call('HGET', K_OFFERS, 'r:first'))
  if not first then return 0, 0 end
  local from = math.max(first, (m - OFFER_RATE_MINUTES + 1) * 60000)
  return fans, math.max(0, now - from)
end

-- Whether user may be offered seats: not in the queue, not in the room,
-- not a buyer.
local function waitlist_eligible(user)
  local st = user_state(user)
  return not (st == 'waiting' or st == 'active' or st == 'seat_selected'
    or st == 'payment_pending' or st == 'completed')
end

-- Offers the seats of freed (a ','-joined list; the ones still available)
-- to the waitlist's head, in order: each fan gets up to the seats they
-- want, held until now + offer_ms (now: the call's time, as number and
-- text). A fan who cannot be offered seats any more (in the queue or the
-- room, or a buyer) leaves the waitlist. What is left when the waitlist is
-- empty stays on general sale. After the sales end no offer is made: an
-- offer starts a hold, and nothing starts after the end (room.lua
-- sales_ended); the seats stay as they are. Returns the number of offers
-- made.
local function waitlist_offer(freed, now, now_s)
  if not freed or freed == '' or redis.call('ZCARD', K_WAITLIST) == 0 then return 0 end
  local c = redis.call('HMGET', K_CONFIG, 'offer_ms', 'hold_pause_ms', 'hold_paused_at', 'sales_end_ms')
  local offer_ms = num(c[1])
  if offer_ms <= 0 or sales_ended(now, c[4]) then return 0 end
  local free = {}
  for _, id in ipairs(split_seats(freed)) do
    if redis.call('HGET', K_SEATS, id) == '' then free[#free + 1] = id end
  end
  local hnow = hold_clock(now, c[2], c[3])
  local deadline = now + offer_ms
  local d, dh = int(deadline), int(hnow + offer_ms)
  local i, made = 1, 0
  while i <= #free do
    local head = redis.call('ZRANGE', K_WAITLIST, 0, 0, 'WITHSCORES')
    if #head == 0 then break end
    local user, s = head[1], int(tonumber(head[2]))
    local want = math.max(1, num(redis.call('HGET', K_OFFERS, 'w:' .. user)))
    redis.call('ZREM', K_WAITLIST, user)
    redis.call('HDEL', K_OFFERS, 'w:' .. user)
    if waitlist_eligible(user) then
      local mine, ids = 'h:' .. user, {}
      while i <= #free and #ids < want do
        redis.call('HSET', K_SEATS, free[i], mine)
        set_seat_status(free[i], 'h')
        ids[#ids + 1] = free[i]
        i = i + 1
      end
      local csv = table.concat(ids, ',')
      redis.call('HINCRBY', K_CONFIG, 'held', #ids)
      redis.call('HSET', K_STATE, user, 'seat_selected')
      redis.call('HSET', K_USEQ, user, s)
      redis.call('HSET', K_USEAT, user, csv)
      redis.call('HDEL', K_UPAY, user)
      redis.call('HDEL', K_UGRACE, user)
      redis.call('ZADD', K_ACTIVE, dh, user)
      local v = s .. '|' .. d .. '|' .. csv .. '|' .. now_s
      redis.call('HSET', K_OFFERS, 'o:' .. user, v, 's:' .. s, user)
      redis.call('HSET', K_OUTBOX, 'o:' .. s .. ':' .. user, v)
      -- an offer admits a fan to buy: it is logged as an admission
      -- (room.lua log_admissions; docs/fairness.md)
      log_admissions({s .. '|' .. now_s .. '|offered|' .. user})
      made = made + 1
    end
  end
  if made > 0 then count_offers(now, made) end
  return made
end

-- Ends user's open offer, if any, with outcome ('accepted', 'declined' or
-- 'expired') at now_s, writing the 'e:' outbox entry. Returns the offer's
-- value, or nil when user had none.
local function close_offer(user, outcome, now_s)
  local v = redis.call('HGET', K_OFFERS, 'o:' .. user)
  if not v then return nil end
  local s, seats = string.match(v, '^([^|]*)|[^|]*|([^|]*)|')
  redis.call('HDEL', K_OFFERS, 'o:' .. user, 's:' .. s)
  redis.call('HSET', K_OUTBOX, 'e:' .. s .. ':' .. user, s .. '|' .. outcome .. '|' .. seats .. '|' .. now_s)
  return v
end

-- After a fan's selection (lock_seat, select_best): choosing seats of an
-- offer accepts it, and seats the new selection gave back go to the
-- waitlist first. freed: hold_seats's second result.
local function offer_after_selection(user, freed, now)
  local now_s = int(now)
  close_offer(user, 'accepted', now_s)
  if #freed > 0 then waitlist_offer(table.concat(freed, ','), now, now_s) end
end
