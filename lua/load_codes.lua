-- load_codes: put access codes into the event's codes hash (lib/codes.lua has their form).
-- ARGV: field, value pairs ('c:<digest>', record; 'u:<user>', seats; 'r:<user>', 1: selected)
-- Replies: {'ok', n (fields written)} | {'event_not_found'} | {'invalid_argument'}
-- KEYS: config, codes (ops.go)
-- A field already there is replaced: a rebuild loads each code with its
-- uses and user from the ledger.
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
if #ARGV == 0 or #ARGV % 2 == 1 then return {'invalid_argument'} end
bulk('HSET', K_CODES, ARGV)
return {'ok', #ARGV / 2}
