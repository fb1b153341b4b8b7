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
-- text, and read once per call: layout_call is the KEYS table of the
-- call that read it (a new table every call; a call runs alone, so the
-- library's tables are the call's). runs_build forgets it.
local layout_text, layout, layout_call = nil, {}, nil

-- The event's rows as {rows, length, ...}; nil when it has no row layout
-- (an explicit map whose index was never built).
local function row_layout()
  if layout_call == KEYS then return layout_text and layout end
  layout_call = KEYS
  local c = redis.call('HMGET', K_CONFIG, 'rowlayout', 'per_row', 'total')
  local text = c[1]
  if not text then
    local per_row = num(c[2])
    if per_row == 0 then
      layout_text = nil
      return nil
    end
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

-- A row's free runs as the index needs them: its longest free run, and
-- in has[n] (n <= RUN_MAX) whether a run of exactly n seats exists. c
-- seats fit when the longest run has c; they fit leaving no single free
-- seat when a run has exactly c, or the longest has c + 2 or more.
local function row_runs(s, has)
  for n = 1, RUN_MAX do has[n] = false end
  local longest, from = 0, 1
  while true do
    local a, b = string.find(s, 'a+', from)
    if not a then break end
    local n = b - a + 1
    if n <= RUN_MAX then has[n] = true end
    if n > longest then longest = n end
    from = b + 1
  end
  return longest
end

-- Whether a row (its longest run and has, row_runs) has index kind k.
local function has_kind(k, longest, has)
  if k > RUN_MAX then return longest >= k - RUN_MAX end
  return has[k] or longest >= k + 2
end

local has_old, has_new = {}, {}

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
  local off = i - start + 1
  -- a seat that stays taken (held to sold, a hold to a kill) or free
  -- changes no run
  if (string.sub(old, off, off) == 'a') == (code == 'a') then return end
  if #old < len then old = old .. string.rep('\0', len - #old) end
  local new = string.sub(old, 1, off - 1) .. code .. string.sub(old, off + 1)
  local lo, ln = row_runs(old, has_old), row_runs(new, has_new)
  for k = 1, 2 * RUN_MAX do
    local was, is = has_kind(k, lo, has_old), has_kind(k, ln, has_new)
    if was ~= is then
      local m = int(k * RUN_SHIFT + row)
      if is then
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
      elseif p == 'r:' then code = 'r' elseif p == 'k:' then code = 'k'
      elseif p == 'c:' then code = 'c' end
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
    layout_call = nil
  end
  redis.call('DEL', K_RUNS)
  local l = row_layout()
  local pos, row, members = 0, 0, {}
  for k = 1, #l, 2 do
    local n, len = l[k], l[k + 1]
    for _ = 1, n do
      local longest = row_runs(string.sub(s, pos + 1, pos + len), has_new)
      for f = 1, 2 * RUN_MAX do
        if has_kind(f, longest, has_new) then
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
