-- rows.lua: the seat map's rows and the index of their free runs (best
-- available and the no-orphan rule, select.lua).
--
-- A row is a run of seatmap positions. config 'rowlayout' is the rows as
-- '<rows>:<seats per row>' pairs joined by ',' in seatmap order (written
-- by runs_build); without it a grid (per_row > 0) is rows of per_row.
--
-- The index (key runs, a sorted set) says which rows can take c adjacent
-- seats, for c from 1 to RUN_MAX: member and score kind * 2^32 + row,
-- kind c when a free run can take c seats leaving no single free seat (a
-- run of exactly c, or of c + 2 or more), kind RUN_MAX + c when a free run
-- has c seats or more at all. So the first row of a range that fits is one
-- ZRANGEBYSCORE ... LIMIT 0 1, O(log rows). Member 'built' (score -1)
-- marks an index built whole (runs_build). Every change of a seat's status
-- byte goes through status_write, which updates its row's members: O(row
-- length). A script that changes a seat's state calls set_seat_status
-- (seats.lua), which calls status_write, and so must take the runs key.

local RUN_MAX = 10 -- booking.MaxSeatsPerOrderLimit
local RUN_SHIFT = 4294967296 -- 2^32: a member's kind above its row

-- The parsed rowlayout (rows, length, rows, length, ...), cached by its
-- text: a call runs alone, so the library's table is the call's.
local layout_text, layout = nil, {}

-- The event's rows as {rows, length, ...}; nil when it has no row layout
-- (an explicit map whose index was never built).
local function row_layout()
  local c = redis.call('HMGET', K_CONFIG, 'rowlayout', 'per_row', 'total')
  local text = c[1]
  if not text then
    local per_row = num(c[2])
    if per_row == 0 then return nil end
    text = int(math.floor(num(c[3]) / per_row)) .. ':' .. int(per_row)
  end
  if text ~= layout_text then
    layout = {}
    for n, len in string.gmatch(text, '(%d+):(%d+)') do
      layout[#layout + 1] = tonumber(n)
      layout[#layout + 1] = tonumber(len)
    end
    layout_text = text
  end
  return layout
end

-- The row of seatmap position i: row number (from 0), its first position
-- and length; nil when unknown.
local function row_of(i)
  local l = row_layout()
  if not l then return nil end
  local pos, row = 0, 0
  for k = 1, #l, 2 do
    local n, len = l[k], l[k + 1]
    if i < pos + n * len then
      local r = math.floor((i - pos) / len)
      return row + r, pos + r * len, len
    end
    pos, row = pos + n * len, row + n
  end
  return nil
end

-- Row r's first position and length; nil when there is no such row.
local function row_span(r)
  local l = row_layout()
  if not l then return nil end
  local pos, row = 0, 0
  for k = 1, #l, 2 do
    local n, len = l[k], l[k + 1]
    if r < row + n then return pos + (r - row) * len, len end
    pos, row = pos + n * len, row + n
  end
  return nil
end

-- Fills fit[1..2*RUN_MAX] for a row's status bytes (index kinds above).
local function row_fits(s, fit)
  for k = 1, 2 * RUN_MAX do fit[k] = false end
  for run in string.gmatch(s, 'a+') do
    local n = #run
    for c = 1, math.min(n, RUN_MAX) do
      fit[RUN_MAX + c] = true
      if n == c or n >= c + 2 then fit[c] = true end
    end
  end
end

local fit_old, fit_new = {}, {}

-- Writes status byte code at position i and keeps its row's index
-- members right: the one way a status byte changes.
local function status_write(i, code)
  local row, start, len = row_of(i)
  if not row then
    redis.call('SETRANGE', K_STATUS, i, code)
    return
  end
  local old = redis.call('GETRANGE', K_STATUS, start, start + len - 1)
  redis.call('SETRANGE', K_STATUS, i, code)
  if #old < len then old = old .. string.rep('\0', len - #old) end
  local off = i - start + 1
  local new = string.sub(old, 1, off - 1) .. code .. string.sub(old, off + 1)
  if new == old then return end
  row_fits(old, fit_old)
  row_fits(new, fit_new)
  for k = 1, 2 * RUN_MAX do
    if fit_new[k] ~= fit_old[k] then
      local m = int(k * RUN_SHIFT + row)
      if fit_new[k] then
        redis.call('ZADD', K_RUNS, m, m)
      else
        redis.call('ZREM', K_RUNS, m)
      end
    end
  end
end

-- The first row in [r0, r1] whose index kind is k; nil when none.
local function first_row(k, r0, r1)
  local got = redis.call('ZRANGEBYSCORE', K_RUNS, int(k * RUN_SHIFT + r0), int(k * RUN_SHIFT + r1),
    'LIMIT', 0, 1)
  if #got == 0 then return nil end
  return tonumber(got[1]) - k * RUN_SHIFT
end

-- The status string, whole: rebuilt from the seats hash (with an explicit
-- map's seatidx) when it is missing, short or has holes ('\0': changes
-- written before it existed). O(seats) when it rebuilds; never on a
-- request path an anonymous client can reach.
local function status_whole()
  local total = num(redis.call('HGET', K_CONFIG, 'total'))
  local cur = redis.call('GET', K_STATUS)
  local grid = num(redis.call('HGET', K_CONFIG, 'per_row')) > 0
  if cur and #cur == total and not string.find(cur, '\0', 1, true)
      and (grid or redis.call('HLEN', K_SEATIDX) == total) then
    return cur
  end
  local ids = redis.call('LRANGE', K_SEATMAP, 0, -1)
  local parts = {}
  local CHUNK = 500
  for i = 1, #ids, CHUNK do
    local last = math.min(i + CHUNK - 1, #ids)
    local got = redis.call('HMGET', K_SEATS, unpack(ids, i, last))
    local idx = {}
    for j = i, last do
      local p = string.sub(got[j - i + 1] or '', 1, 2)
      local code = 'a'
      if p == 'h:' then code = 'h' elseif p == 's:' then code = 's'
      elseif p == 'r:' then code = 'r' elseif p == 'k:' then code = 'k' end
      parts[#parts + 1] = code
      idx[#idx + 1] = ids[j]
      idx[#idx + 1] = j - 1
    end
    if not grid then redis.call('HSET', K_SEATIDX, unpack(idx)) end
  end
  local s = table.concat(parts)
  redis.call('SET', K_STATUS, s)
  return s
end

-- Derives the row layout when config has none (a grid: rows of per_row;
-- else, within each priced section, a new row wherever a seat id's part
-- before its number changes) and builds the index whole from the status
-- string. O(seats): at creation, and once on an event rebuilt or made
-- before the index (select_best finds no 'built').
local function runs_build()
  local s = status_whole()
  local c = redis.call('HMGET', K_CONFIG, 'rowlayout', 'per_row', 'prices', 'total')
  if not c[1] then
    local per_row, total = num(c[2]), num(c[4])
    local text
    if per_row > 0 then
      text = int(math.floor(total / per_row)) .. ':' .. int(per_row)
    else
      local ends, at = {}, 0
      for len in string.gmatch(c[3] or '', '(%d+):%d+') do
        at = at + tonumber(len)
        ends[at] = true
      end
      local ids = redis.call('LRANGE', K_SEATMAP, 0, -1)
      local lens, prev, len = {}, nil, 0
      for j, id in ipairs(ids) do
        local p = string.match(id, '^(.-)%d*$')
        if len > 0 and (p ~= prev or ends[j - 1]) then
          lens[#lens + 1] = len
          len = 0
        end
        prev, len = p, len + 1
      end
      if len > 0 then lens[#lens + 1] = len end
      local out, n = {}, 0
      for j = 1, #lens do
        n = n + 1
        if lens[j + 1] ~= lens[j] then
          out[#out + 1] = int(n) .. ':' .. int(lens[j])
          n = 0
        end
      end
      text = table.concat(out, ',')
    end
    redis.call('HSET', K_CONFIG, 'rowlayout', text)
  end
  redis.call('DEL', K_RUNS)
  local l = row_layout()
  local pos, row, members = 0, 0, {}
  for k = 1, #l, 2 do
    local n, len = l[k], l[k + 1]
    for _ = 1, n do
      row_fits(string.sub(s, pos + 1, pos + len), fit_new)
      for f = 1, 2 * RUN_MAX do
        if fit_new[f] then
          local m = int(f * RUN_SHIFT + row)
          members[#members + 1] = m
          members[#members + 1] = m
        end
      end
      if #members >= 1000 then
        redis.call('ZADD', K_RUNS, unpack(members))
        members = {}
      end
      pos, row = pos + len, row + 1
    end
  end
  if #members > 0 then redis.call('ZADD', K_RUNS, unpack(members)) end
  redis.call('ZADD', K_RUNS, -1, 'built')
end
