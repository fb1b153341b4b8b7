-- base.lua: the library's frame and the helpers every part uses. The
-- library is these lib/ files in a fixed order (lua/lua.go libParts),
-- then each operation's file as the body of a function.
--
-- KEYS, ARGV, NKEYS (the number of event keys in KEYS) and the K_* names
-- are set at the start of every call by the function's registration
-- (lua/lua.go), from the keys lua/ops.go declares for it: K_<NAME> is the
-- event key <name>, nil when the function does not take it. A call runs
-- alone, so they are the call's own until it returns. An event's keys and
-- what they hold: docs/booking-engine.md "Key layout". Time is Redis's:
-- a script that needs it calls clock() once (below); no script takes a
-- time from its caller.
local KEYS, ARGV, NKEYS
local K_CONFIG, K_SEATS, K_SEATMAP, K_WAITING, K_ACTIVE, K_SEQ, K_SEEN, K_OUTBOX
local K_RATE, K_STATE, K_USEQ, K_USEAT, K_UPAY, K_UGRACE, K_PAYS, K_STATUS, K_SEATIDX
local K_ALOG
local K_CODES
local K_RUNS
local K_WAITLIST, K_OFFERS
local K_ALLOC
local K_BOXSALES
local K_PQ, K_PQDRAW

local function num(v)
  return tonumber(v) or 0
end

-- int(n): an integral number as the decimal integer Go parses
-- (strconv.ParseInt): THE way a number becomes text in these scripts.
-- Lua's own conversion (.., tostring) prints %.14g, exponent form above
-- 10^14, so a number is never joined with .. or given to tostring except
-- through int (lua/numbers_test.go fails on any; docs/booking-engine.md
-- "How numbers are written"). Hot paths pass int(n), made once and
-- reused, rather than a number to redis.call (docs/benchmarks.md "Number
-- formatting in Lua"). Exact for |n| <= 2^53. '%d' formats a C long; a
-- build whose long has 32 bits gets '%.0f' instead, chosen at the first
-- call (the library's load may not use string).
local INT_FORMAT
local function int(n)
  if not INT_FORMAT then
    INT_FORMAT = '%d'
    if string.format('%d', 9007199254740992) ~= '9007199254740992' then INT_FORMAT = '%.0f' end
  end
  return string.format(INT_FORMAT, n)
end

-- clock(): the call's time, Redis's clock (TIME) in unix ms, as a number
-- and as int's text. A script reads it once and judges everything by that
-- one instant, whichever process called it: deadlines, the rate cap's
-- seconds, the abuse limits' buckets and every time written. TIME is
-- safe in a function under effects replication (the default since Redis
-- 7): replicas and the AOF get the writes, never the call.
-- docs/booking-engine.md "One clock".
local function clock()
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  return now, int(now)
end

-- Run a variadic command over a long argument list in chunks (Lua's
-- unpack() is limited by the C stack; 1000 is well inside it): args[1..n],
-- n defaulting to #args.
local function bulk(cmd, key, args, n)
  n = n or #args
  for i = 1, n, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, n)))
  end
end

-- The seat ids of a ','-joined list ('' gives none).
local function split_seats(csv)
  local out = {}
  if not csv then return out end
  for id in string.gmatch(csv, '[^,]+') do out[#out + 1] = id end
  return out
end

-- A user's state: the state field, else 'waiting' for a member of the
-- queue, else nil (never joined).
local function user_state(user)
  local state = redis.call('HGET', K_STATE, user)
  if state then return state end
  if redis.call('ZSCORE', K_WAITING, user) then return 'waiting' end
  return nil
end

-- A user's join sequence (0 when never joined): a waiting user's score,
-- else (not waiting, or pre-queued with a draw key for a score) useq.
local function user_seq(user)
  local score = tonumber(redis.call('ZSCORE', K_WAITING, user))
  local kept = redis.call('HGET', K_USEQ, user)
  if score and score >= 1 and not kept then return score end
  return num(kept)
end

-- wait_seq is the join sequence of a waiting user whose score is score:
-- the score itself, but useq's when the score is a draw's (a first
-- phase's pre-queued user: below 1; a later phase's drawn user: base +
-- rank, above pq_lo, the config's lowest base of such a draw, nil when
-- none), so an event without a later phase's draw reads nothing more.
local function wait_seq(user, score, pq_lo)
  if score >= 1 and (not pq_lo or score <= num(pq_lo)) then return score end
  local kept = tonumber(redis.call('HGET', K_USEQ, user))
  if kept or score < 1 then return kept or 0 end
  return score
end
