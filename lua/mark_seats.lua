-- mark_seats: operators hold seats for a purpose, kill them (never for sale), allocate them to a channel or release them to sale, all or none; or end a channel's allocation.
-- ARGV: 1 action ('hold' | 'kill' | 'allocate' | 'release' | 'end_allocation' | 'accessible' | 'set_kind'), 2 purpose
--   (hold) or channel (allocate, end_allocation) or kind ('wheelchair' | 'companion': accessible, a rebuild; also
--   '' none: set_kind, an operator's), '' otherwise,
--   3 release time of the channel's allocation in ms (allocate; '' unchanged), or 'now' | 'due' (end_allocation: at
--   once, or only once the release time has passed by Redis's clock), 4.. seat ids (none for end_allocation)
-- Replies: {'ok', changed, {changed seat ids}} (end_allocation: the seats put on sale; accessible: the seats in the
--   map given the kind; set_kind: the seats whose kind changed) | end_allocation of a channel with nothing to end (a
--   repeat): {'ok', 0, {}, {the seats the channel's last end put on sale, if Redis keeps it}}
--   | {'seat_unknown', {seat ids}}
--   | {'not_due', release_at_ms (0: none set)} (end_allocation)
--   | {'seat_refused', {seat id, status, ...}} | {'invalid_argument'} | {'event_not_found'}
-- KEYS: config, seats, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers, alloc (ops.go)
-- A seat's value in seats is 'r:<purpose>' while held for a purpose,
-- 'k:' while killed and 'c:<channel>' while allocated to a channel; its
-- status byte 'r', 'k' or 'c'. An allocated seat is also in alloc
-- (seat -> channel) while a fan of the channel holds or bought it, so it
-- goes back to the channel when the fan gives it back, and
-- the rows of a channel's seats are in alloc ' r:<channel>' (the rows
-- best available reads, lib/select.lua best_in_channels), and a seat
-- ever allocated to the channel wheelchair or companion has that kind in
-- alloc ' a:<seat>' for good (its allocation's end keeps it); the release
-- time in config 'ra:<channel>' (end_allocation, below). A hold or kill takes a
-- free seat or one operators hold or killed already (its purpose or kind
-- changes); a release takes seats operators hold or killed. A seat a fan
-- holds or bought is refused with its status and nothing changes. A seat
-- already as asked (for a release: on sale) is left as it is, so a
-- repeat changes nothing (changed 0).
local action, purpose, release_at = ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
-- The end of a channel's allocation, whole: seats allocated and unsold go
-- on sale now, offered to the waitlist; seats of the channel a fan holds
-- or bought lose their channel, so a hold that ends or a sale cancelled
-- puts them on sale. The release time and the channel's rows go too, so
-- a repeat changes nothing; the seats put on sale are kept in alloc
-- ' e:<channel>' (until the channel is allocated again), which a repeat
-- answers, so that the ledger can record an end whose own record was
-- lost. O(seats allocated to any channel): an operator's call, or one per
-- release time, never a fan's.
if action == 'end_allocation' then
  local ch = purpose
  if ch == '' or (release_at ~= 'now' and release_at ~= 'due') then return {'invalid_argument'} end
  local now, now_s = clock()
  local at = num(redis.call('HGET', K_CONFIG, 'ra:' .. ch))
  local all = redis.call('HGETALL', K_ALLOC)
  local owned, rows = {}, ' r:' .. ch
  local listed = false
  for i = 1, #all, 2 do
    local seat, owner = all[i], all[i + 1]
    if owner == ch and string.sub(seat, 1, 1) ~= ' ' then
      owned[#owned + 1] = seat
    elseif seat == rows then
      listed = true
    end
  end
  if at <= 0 and not listed and #owned == 0 then
    -- nothing to end: the seats the channel's last end put on sale
    local last = redis.call('HGET', K_ALLOC, ' e:' .. ch)
    local before = {}
    for seat in string.gmatch(last or '', '[^,]+') do before[#before + 1] = seat end
    return {'ok', 0, {}, before}
  end
  if release_at == 'due' and (at <= 0 or at > now) then return {'not_due', at} end
  local released, target = {}, 'c:' .. ch
  for _, seat in ipairs(owned) do
    redis.call('HDEL', K_ALLOC, seat)
    if redis.call('HGET', K_SEATS, seat) == target then
      redis.call('HSET', K_SEATS, seat, '')
      set_seat_status(seat, 'a')
      released[#released + 1] = seat
    end
  end
  redis.call('HDEL', K_ALLOC, rows)
  redis.call('HDEL', K_CONFIG, 'ra:' .. ch)
  redis.call('HSET', K_ALLOC, ' e:' .. ch, table.concat(released, ','))
  if #released > 0 then
    redis.call('HINCRBY', K_CONFIG, 'allocated', -#released)
    waitlist_offer(table.concat(released, ','), now, now_s)
  end
  return {'ok', #released, released}
end
-- The kind of seats reserved for accessibility, set again by a rebuild
-- (the ledger keeps it when their allocation ended): purpose 'wheelchair'
-- or 'companion'; seats not in the map are left out.
if action == 'accessible' then
  if purpose ~= 'wheelchair' and purpose ~= 'companion' then return {'invalid_argument'} end
  local set = {}
  for i = 4, #ARGV do
    if redis.call('HEXISTS', K_SEATS, ARGV[i]) == 1 then
      redis.call('HSET', K_ALLOC, ' a:' .. ARGV[i], purpose)
      set[#set + 1] = ARGV[i]
    end
  end
  return {'ok', #set, set}
end
-- An operator sets or clears (purpose '') seats' kind, all or none. A
-- seat allocated to the channel wheelchair or companion is of that kind
-- while the allocation lasts: another kind, or none, is refused with
-- status 'allocated' (end or release the allocation first).
if action == 'set_kind' then
  if purpose ~= '' and purpose ~= 'wheelchair' and purpose ~= 'companion' then return {'invalid_argument'} end
  local unknown, refused, changed, seen = {}, {}, {}, {}
  for i = 4, #ARGV do
    local seat = ARGV[i]
    local ch = redis.call('HGET', K_ALLOC, seat)
    if redis.call('HEXISTS', K_SEATS, seat) == 0 then
      unknown[#unknown + 1] = seat
    elseif (ch == 'wheelchair' or ch == 'companion') and ch ~= purpose then
      refused[#refused + 1] = seat
      refused[#refused + 1] = 'allocated'
    end
  end
  if #unknown > 0 then return {'seat_unknown', unknown} end
  if #refused > 0 then return {'seat_refused', refused} end
  for i = 4, #ARGV do
    local seat = ARGV[i]
    local f = ' a:' .. seat
    if not seen[seat] and (redis.call('HGET', K_ALLOC, f) or '') ~= purpose then
      if purpose == '' then redis.call('HDEL', K_ALLOC, f) else redis.call('HSET', K_ALLOC, f, purpose) end
      changed[#changed + 1] = seat
    end
    seen[seat] = true
  end
  return {'ok', #changed, changed}
end
local target, code
if action == 'hold' and purpose ~= '' then
  target, code = 'r:' .. purpose, 'r'
elseif action == 'allocate' and purpose ~= '' then
  target, code = 'c:' .. purpose, 'c'
elseif action == 'kill' then
  target, code = 'k:', 'k'
elseif action == 'release' then
  target, code = '', 'a'
else
  return {'invalid_argument'}
end
local seen, unknown, refused, todo = {}, {}, {}, {}
for i = 4, #ARGV do
  local seat = ARGV[i]
  if not seen[seat] then
    seen[seat] = true
    local v = redis.call('HGET', K_SEATS, seat)
    local p = v and string.sub(v, 1, 2)
    if not v then
      unknown[#unknown + 1] = seat
    elseif p == 'h:' or p == 's:' then
      refused[#refused + 1] = seat
      refused[#refused + 1] = p == 'h:' and 'held' or 'sold'
    elseif v ~= target then
      todo[#todo + 1] = {seat, p}
    end
  end
end
if #unknown > 0 then return {'seat_unknown', unknown} end
if #refused > 0 then return {'seat_refused', refused} end
-- a seat allocated to an accessibility channel is that kind of seat from
-- then on (alloc ' a:<seat>'): the end of the allocation leaves it
if code == 'c' and (purpose == 'wheelchair' or purpose == 'companion') then
  for i = 4, #ARGV do redis.call('HSET', K_ALLOC, ' a:' .. ARGV[i], purpose) end
end
local changed, reserved, killed, allocated, rows = {}, 0, 0, 0, {}
for _, t in ipairs(todo) do
  local seat, p = t[1], t[2]
  if p == 'r:' then reserved = reserved - 1 elseif p == 'k:' then killed = killed - 1
  elseif p == 'c:' then allocated = allocated - 1 end
  if code == 'r' then reserved = reserved + 1 elseif code == 'k' then killed = killed + 1
  elseif code == 'c' then allocated = allocated + 1 end
  redis.call('HSET', K_SEATS, seat, target)
  set_seat_status(seat, code)
  if code == 'c' then
    redis.call('HSET', K_ALLOC, seat, purpose)
    local i = seat_index(seat)
    local row = i and row_of(i)
    if row then rows[row] = true end
  elseif p == 'c:' then
    redis.call('HDEL', K_ALLOC, seat)
  end
  changed[#changed + 1] = seat
end
if reserved ~= 0 then redis.call('HINCRBY', K_CONFIG, 'reserved', reserved) end
if killed ~= 0 then redis.call('HINCRBY', K_CONFIG, 'killed', killed) end
if allocated ~= 0 then redis.call('HINCRBY', K_CONFIG, 'allocated', allocated) end
if code == 'c' then
  redis.call('HDEL', K_ALLOC, ' e:' .. purpose)
  local known = redis.call('HGET', K_ALLOC, ' r:' .. purpose) or ''
  for r in string.gmatch(known, '%d+') do rows[tonumber(r)] = true end
  local list = {}
  for r in pairs(rows) do list[#list + 1] = r end
  table.sort(list)
  for k, r in ipairs(list) do list[k] = int(r) end
  redis.call('HSET', K_ALLOC, ' r:' .. purpose, table.concat(list, ','))
  local at = tonumber(release_at)
  if at and at > 0 then
    redis.call('HSET', K_CONFIG, 'ra:' .. purpose, int(at))
  elseif release_at == '0' then
    redis.call('HDEL', K_CONFIG, 'ra:' .. purpose)
  end
end
if code == 'a' then waitlist_offer(table.concat(changed, ','), clock()) end
return {'ok', #changed, changed}
