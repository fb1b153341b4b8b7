-- mend_outbox.lua — rewrite outbox entries that an earlier version wrote
-- with the join sequence in Lua's exponent form ('x:1.795811857885e+15:u'
-- -> '1.795811857885e+15|...': %.14g, the digits past 14 lost; lib.lua
-- int) under their exact sequence, which the user's record still holds
-- while the user's last hold is the one the entry is about
-- (booking.Store.Outbox reads the record and matches it to the entry).
-- An entry changes only if it, the user's state and the user's sequence
-- are still as read; the exact field is not overwritten when present.
-- KEYS: the event key set (lib.lua)
--   reads:  outbox, state, useq
--   writes: outbox
-- ARGV: 7 per entry: field, value as read, user_id, state and sequence
--   (useq) as read, the exact field, the exact value
-- Replies: {'ok', {1 (mended) | 0 (changed since read), ...}}
local done = {}
for i = 1, #ARGV - 6, 7 do
  local user = ARGV[i + 2]
  local ok = 0
  if redis.call('HGET', K_OUTBOX, ARGV[i]) == ARGV[i + 1] and redis.call('HGET', K_STATE, user) == ARGV[i + 3]
      and redis.call('HGET', K_USEQ, user) == ARGV[i + 4] then
    redis.call('HDEL', K_OUTBOX, ARGV[i])
    redis.call('HSETNX', K_OUTBOX, ARGV[i + 5], ARGV[i + 6])
    ok = 1
  end
  done[#done + 1] = ok
end
return {'ok', done}
