-- select.lua: a fan's selection of seats (lock_seat.lua, select_best.lua):
-- who may select, the hold written all or none, best available from the
-- index of free runs (rows.lua) and the no-orphan rule.
--
-- The no-orphan rule: best available never leaves a single free seat
-- between two taken seats or at a row's end unless no other choice of as
-- many adjacent seats fits; with config no_orphans '1' a manual selection
-- that would is refused (orphan_refusal) unless no other choice fits in
-- its section.

-- The hold deadline of a user who may select now, with the call's time
-- and the hold clock; nil and the error reply otherwise.
local function selecting_user(user)
  local now = clock()
  local hnow = event_hold_clock(now)
  if not hnow then return nil, {'event_not_found'} end
  local state = user_state(user)
  if not state then return nil, {'not_found'} end
  if state ~= 'active' and state ~= 'seat_selected' then return nil, {'invalid_state', state} end
  local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
  if not deadline or deadline <= hnow then return nil, {'hold_expired'} end
  return deadline, now, hnow
end

-- Builds the index of free runs when it is not built whole (runs_build).
local function ensure_runs()
  if not redis.call('ZSCORE', K_RUNS, 'built') then runs_build() end
end

-- Row r's letters in a grid, as booking.rowName: A…Z, AA, AB…
local function row_name(r)
  local name = ''
  while r >= 0 do
    name = string.char(65 + r % 26) .. name
    r = math.floor(r / 26) - 1
  end
  return name
end

-- The ids of the c seats from seatmap position pos.
local function seats_at(pos, c)
  local per_row = num(redis.call('HGET', K_CONFIG, 'per_row'))
  if per_row == 0 then return redis.call('LRANGE', K_SEATMAP, pos, pos + c - 1) end
  local out, name = {}, row_name(math.floor(pos / per_row))
  for k = 1, c do out[k] = name .. int(pos % per_row + k) end
  return out
end

-- The 0-based offset in a row (its status bytes s) of c adjacent free
-- seats whose middle is nearest target2 (twice a position: len - 1 is the
-- row's centre), the leftmost of equals; clean: leaving no single free
-- seat. nil when none. O(row length).
local function pick_in_row(s, c, clean, target2)
  local best, bestd
  local from = 1
  while true do
    local a, b = string.find(s, 'a+', from)
    if not a then break end
    local n = b - a + 1
    if n >= c and (not clean or n == c or n >= c + 2) then
      for o = a - 1, b - c do
        local left, right = o - a + 1, b - o - c
        if not clean or (left ~= 1 and right ~= 1) then
          local d = math.abs(2 * o + c - 1 - target2)
          if not bestd or d < bestd then best, bestd = o, d end
        end
      end
    end
    from = b + 1
  end
  return best
end

-- The best place for c adjacent seats in rows [r0, r1]: the first row
-- that has them, nearest its centre. Returns the first seat's position
-- and whether it leaves a single free seat (only when clean finds none
-- and fallback is set); nil when nothing fits.
local function best_place(c, r0, r1, clean, fallback)
  local kinds = {clean and c or RUN_MAX + c}
  if clean and fallback then kinds[2] = RUN_MAX + c end
  for _, kind in ipairs(kinds) do
    local row = first_row(kind, r0, r1)
    if row then
      local start, len = row_span(row)
      local s = redis.call('GETRANGE', K_STATUS, start, start + len - 1)
      local o = pick_in_row(s, c, kind == c, len - 1)
      if o then return start + o, clean and kind ~= c end
    end
  end
  return nil
end

-- The most adjacent seats (below c) rows [r0, r1] still have together.
local function largest_run(c, r0, r1)
  for k = math.min(c - 1, RUN_MAX), 1, -1 do
    if first_row(RUN_MAX + k, r0, r1) then return k end
  end
  return 0
end

-- The rows [r0, r1] of the section named name ('': every row); nil when
-- the event has no such section.
local function section_rows(name)
  if name == '' then return 0, RUN_SHIFT - 1 end
  local c = redis.call('HMGET', K_CONFIG, 'sections', 'total')
  local start, len
  if c[1] then
    for _, sec in ipairs(cjson.decode(c[1])) do
      if sec.name == name then start, len = tonumber(sec.start), tonumber(sec.len) end
    end
  elseif name == 'General' then
    start, len = 0, num(c[2])
  end
  if not start or len <= 0 then return nil end
  local r0, r1 = row_of(start), row_of(start + len - 1)
  if not r0 or not r1 then return nil end
  return r0, r1
end

-- The rows of the section seatmap position i falls in.
local function section_rows_at(i)
  local at = 0
  for len in string.gmatch(redis.call('HGET', K_CONFIG, 'prices') or '', '(%d+):%d+') do
    local n = tonumber(len)
    if i < at + n then return row_of(at), row_of(at + n - 1) end
    at = at + n
  end
  return 0, RUN_SHIFT - 1
end

-- Best available within the allocations of the request's channels: the
-- rows holding their seats (alloc ' r:<channel>', row numbers kept by
-- mark_seats.lua) in row order, each read as its status bytes with the
-- channel's own seats ('c' of one of channels) free, nearest the row's
-- centre; clean first, then any. O(row length) per such row, bounded by
-- the allocation's rows. Returns the first seat's position and whether
-- it leaves a single free seat; nil when none fits.
local function best_in_channels(c, channels, r0, r1)
  local rows = {}
  for ch in pairs(channels) do
    for r in string.gmatch(redis.call('HGET', K_ALLOC, ' r:' .. string.sub(ch, 1)) or '', '%d+') do
      local row = tonumber(r)
      if row >= r0 and row <= r1 then rows[#rows + 1] = row end
    end
  end
  if #rows == 0 then return nil end
  table.sort(rows)
  for pass = 1, 2 do
    local prev
    for _, row in ipairs(rows) do
      if row ~= prev then
        prev = row
        local start, len = row_span(row)
        local s = redis.call('GETRANGE', K_STATUS, start, start + len - 1)
        if string.find(s, 'c', 1, true) then
          local ids = seats_at(start, len)
          local owners = redis.call('HMGET', K_ALLOC, unpack(ids))
          local b = {}
          for j = 1, len do
            local x = string.sub(s, j, j)
            if x == 'c' and owners[j] and channels[owners[j]] then x = 'a'
            elseif x ~= 'a' then x = 'x' end
            b[j] = x
          end
          local o = pick_in_row(table.concat(b), c, pass == 1, len - 1)
          if o then return start + o, pass == 2 end
        end
      end
    end
  end
  return nil
end

-- A manual selection's no-orphan check: nil when it leaves no single
-- free seat beside a seat it takes (the user's own previous seats count
-- as free), or when no other choice of as many adjacent seats avoids
-- one; else the refusal {'orphan_seat', {seats left single}, {suggested
-- seats}}: the nearest clean choice in the first seat's row (the user's
-- own seats free), else the best in its section (the user's own seats
-- taken). O(row length) per row the selection touches.
local function orphan_refusal(user, want)
  ensure_runs()
  local rows, order = {}, {}
  for _, seat in ipairs(want) do
    local i = seat_index(seat)
    local row, start, len
    if i then row, start, len = row_of(i) end
    if row then
      local r = rows[row]
      if not r then
        local s = redis.call('GETRANGE', K_STATUS, start, start + len - 1)
        r = {start = start, len = len, bytes = {}, want = {}, first = i}
        for j = 1, len do r.bytes[j] = string.sub(s, j, j) end
        rows[row] = r
        order[#order + 1] = row
      end
      r.want[#r.want + 1] = i - start + 1
    end
  end
  local mine = 'h:' .. user
  for _, prev in ipairs(split_seats(redis.call('HGET', K_USEAT, user))) do
    local i = seat_index(prev)
    if i and redis.call('HGET', K_SEATS, prev) == mine then
      local row, start = row_of(i)
      local r = row and rows[row]
      if r and r.bytes[i - start + 1] == 'h' then r.bytes[i - start + 1] = 'a' end
    end
  end
  for _, row in ipairs(order) do
    local r = rows[row]
    r.s = table.concat(r.bytes) -- the row with the user's own seats free
    for _, j in ipairs(r.want) do r.bytes[j] = 'x' end
  end
  local orphans = {}
  for _, row in ipairs(order) do
    local r = rows[row]
    local b = r.bytes
    for j = 1, r.len do
      if b[j] == 'a' and b[j - 1] ~= 'a' and b[j + 1] ~= 'a' and (b[j - 1] == 'x' or b[j + 1] == 'x') then
        orphans[#orphans + 1] = seats_at(r.start + j - 1, 1)[1]
      end
    end
  end
  if #orphans == 0 then return nil end
  local c = #want
  local first = rows[order[1]]
  local pos
  local o = pick_in_row(first.s, c, true, 2 * (first.first - first.start) + c - 1)
  if o then
    pos = first.start + o
  else
    local r0, r1 = section_rows_at(first.start)
    pos = best_place(c, r0, r1, true, false)
  end
  if not pos then return nil end
  return {'orphan_seat', orphans, seats_at(pos, c)}
end

-- Whether the seats want may be taken by a request through channels (a
-- set) for the holder value mine ('h:<user>' or 's:<user>': the holder's
-- own seats count as free): the seats' values in order, or nil and the
-- refusal: {'invalid_argument'} (a seat twice), {'seat_unknown', seat},
-- {'seat_not_for_sale', {seats}} (held or killed by operators, or
-- allocated to another channel whose allocation is not due),
-- {'seat_unavailable', {seats held or sold by another}}.
local function seats_refusal(want, channels, mine, now)
  local wanted, vals, taken, kept = {}, {}, {}, {}
  for i, seat in ipairs(want) do
    if wanted[seat] then return nil, {'invalid_argument'} end
    wanted[seat] = true
    local v = redis.call('HGET', K_SEATS, seat)
    if not v then return nil, {'seat_unknown', seat} end
    local p = string.sub(v, 1, 2)
    if p == 'c:' then
      local ch = string.sub(v, 3)
      -- due back on sale (config 'ra:<channel>', its release time:
      -- mark_seats.lua end_allocation returns such seats; until it runs, anyone
      -- may take one)
      local at = tonumber(redis.call('HGET', K_CONFIG, 'ra:' .. ch))
      if not channels[ch] and not (at and at <= now) then kept[#kept + 1] = seat end
    elseif p == 'r:' or p == 'k:' then
      kept[#kept + 1] = seat
    elseif v ~= '' and v ~= mine then
      taken[#taken + 1] = seat
    end
    vals[i] = v
  end
  if #kept > 0 then return nil, {'seat_not_for_sale', kept} end
  if #taken > 0 then return nil, {'seat_unavailable', taken} end
  return vals
end

-- Takes the free seats of want (vals: their values, seats_refusal) for
-- holder ('h:<user>' or 's:<user>'), with status code ('h' or 's'),
-- keeping the allocated count right; returns how many it took. A due
-- allocation's seat is on general sale: it does not go back to its
-- channel when freed.
local function take_seats(want, vals, channels, holder, code)
  local took, allocated = 0, 0
  for i, seat in ipairs(want) do
    local v = vals[i]
    if v == '' or string.sub(v, 1, 2) == 'c:' then
      if v ~= '' then
        allocated = allocated - 1
        if not channels[string.sub(v, 3)] then redis.call('HDEL', K_ALLOC, seat) end
      end
      redis.call('HSET', K_SEATS, seat, holder)
      set_seat_status(seat, code)
      took = took + 1
    end
  end
  if allocated ~= 0 then redis.call('HINCRBY', K_CONFIG, 'allocated', allocated) end
  return took
end

-- Holds the seats want (their ids; csv joined by ',') for user, all or
-- none, replacing the user's previous selection; deadline, now and hnow
-- from selecting_user. manual: a fan's own choice, held to the no-orphan
-- rule (orphan_refusal). channels: the request's, a set (channels[name]
-- true): the token's channel claim and the event's current phase; a
-- seat allocated to another channel is refused seat_not_for_sale unless
-- its allocation is due (it is then on general sale).
-- Replies as lock_seat.lua.
local function hold_seats(user, want, csv, deadline, now, hnow, manual, channels)
  local max = tonumber(redis.call('HGET', K_CONFIG, 'max_seats')) or 4
  if #want > max then return {'too_many_seats', max} end
  local mine = 'h:' .. user
  local vals, refusal = seats_refusal(want, channels, mine, now)
  if not vals then return refusal end
  if manual and redis.call('HGET', K_CONFIG, 'no_orphans') == '1' then
    local orphans = orphan_refusal(user, want)
    if orphans then return orphans end
  end

  local wanted, delta, freed = {}, 0, {}
  for _, seat in ipairs(want) do wanted[seat] = true end
  for _, prev in ipairs(split_seats(redis.call('HGET', K_USEAT, user))) do
    if not wanted[prev] and redis.call('HGET', K_SEATS, prev) == mine then
      if free_seat(prev) then freed[#freed + 1] = prev end
      delta = delta - 1
    end
  end
  delta = delta + take_seats(want, vals, channels, mine, 'h')
  if delta ~= 0 then redis.call('HINCRBY', K_CONFIG, 'held', delta) end
  redis.call('HSET', K_USEAT, user, csv)
  redis.call('HSET', K_STATE, user, 'seat_selected')
  return {'ok', csv, deadline + now - hnow}, freed
end
