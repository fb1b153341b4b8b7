-- seats.lua: the seat map, a seat's position, status and price.

-- Writes the seat ids ARGV[first..last] as the event's seat map: each seat
-- available in seats, the display order in seatmap, and for an explicit
-- map (ARGV[10], per_row, is 0; a grid's index is computed) each id's
-- 0-based position in seatidx (seat_index, seat_price). In chunks:
-- unpack() has a stack limit.
local function write_seatmap(first, last)
  local CHUNK = 500
  for i = first, last, CHUNK do
    local stop = math.min(i + CHUNK - 1, last)
    local pairs_ = {}
    for j = i, stop do
      pairs_[#pairs_ + 1] = ARGV[j]
      pairs_[#pairs_ + 1] = ''
    end
    redis.call('HSET', K_SEATS, unpack(pairs_))
    redis.call('RPUSH', K_SEATMAP, unpack(ARGV, i, stop))
    if tonumber(ARGV[10]) == 0 then
      local idx = {}
      for j = i, stop do
        idx[#idx + 1] = ARGV[j]
        idx[#idx + 1] = j - first
      end
      redis.call('HSET', K_SEATIDX, unpack(idx))
    end
  end
end

-- A seat's position in the seat map: computed from the id for a grid
-- (rows x per_row, ids A1…, B1…, AA1…: bijective base 26), looked up in
-- seatidx for an explicit map. nil when unknown.
local function seat_index(seat)
  local per_row = num(redis.call('HGET', K_CONFIG, 'per_row'))
  if per_row == 0 then
    local i = redis.call('HGET', K_SEATIDX, seat)
    return i and tonumber(i)
  end
  local letters, n = string.match(seat, '^([A-Z]+)(%d+)$')
  if not letters then return nil end
  local row = 0
  for k = 1, #letters do row = row * 26 + (string.byte(letters, k) - 64) end
  return (row - 1) * per_row + tonumber(n) - 1
end

-- Every change of a seat's value in K_SEATS calls this with the new status
-- ('a', 'h' or 's'; 'r' or 'k' for a seat operators hold or killed, 'c'
-- for one allocated to a channel, mark_seats.lua) so the status string stays the seats hash's mirror.
-- On an event created before the string existed the write may leave a
-- string with holes ('\0'); its next read rebuilds it whole from the
-- seats hash (seat_status.lua).
-- The write goes through status_write (rows.lua), which keeps the row's
-- free-run index right: a script calling this takes the runs key.
local function set_seat_status(seat, code)
  local i = seat_index(seat)
  if i then status_write(i, code) end
end

-- A seat a fan gives back (a hold that ends, a selection replaced, a sale
-- cancelled) returns where it came from: to the channel it is allocated
-- to (alloc, mark_seats.lua), else on sale. Returns true when it went on
-- sale (only those are offered to the waitlist).
local function free_seat(seat)
  local ch = redis.call('HGET', K_ALLOC, seat)
  redis.call('HSET', K_SEATS, seat, ch and 'c:' .. ch or '')
  set_seat_status(seat, ch and 'c' or 'a')
  if ch then redis.call('HINCRBY', K_CONFIG, 'allocated', 1) end
  return not ch
end

-- A seat's price in cents: the price of the section (config 'prices') its
-- position falls in; 0 when the event has no prices (made before sections).
local function seat_price(seat)
  local prices = redis.call('HGET', K_CONFIG, 'prices')
  if not prices then return 0 end
  -- (an explicit map whose index is being rebuilt: find it in the list)
  local i = seat_index(seat) or redis.call('LPOS', K_SEATMAP, seat)
  if not i then return 0 end
  local start = 0
  for len, cents in string.gmatch(prices, '(%d+):(%d+)') do
    start = start + tonumber(len)
    if i < start then return tonumber(cents) end
  end
  return 0
end

-- Each seat's price, joined by ',' in the order of the seats.
local function seat_prices(csv)
  local out = {}
  for _, seat in ipairs(split_seats(csv)) do out[#out + 1] = seat_price(seat) end
  return table.concat(out, ',')
end

-- The amount of an order: the sum of its seats' prices.
local function order_amount(csv)
  local sum = 0
  for _, seat in ipairs(split_seats(csv)) do sum = sum + seat_price(seat) end
  return sum
end
