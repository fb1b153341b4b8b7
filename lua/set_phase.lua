-- set_phase: the event's current phase and who may join in it (lib/codes.lua reads them).
-- ARGV: 1 phase id ('' none), 2 audience ('public' | 'code' | 'registered')
-- Replies: {'ok', changed (0|1), previous phase, previous audience} | {'event_not_found'} | {'invalid_argument'}
-- KEYS: config (ops.go)
-- A join with a code redeems it only for the code's phase (or a code of
-- every phase); while the audience is 'code' a join without one is
-- refused code_required; while it is 'registered' a join of a user the
-- registration's draw did not select (and with no code) is refused
-- not_selected. Users waiting or in the room are left as they
-- are: they keep their place and their hold.
local phase, audience = ARGV[1], ARGV[2]
if audience ~= 'public' and audience ~= 'code' and audience ~= 'registered' then return {'invalid_argument'} end
local c = redis.call('HMGET', K_CONFIG, 'total', 'phase', 'audience')
if not c[1] then return {'event_not_found'} end
local was, wasaud = c[2] or '', c[3] or 'public'
if was == phase and wasaud == audience then return {'ok', 0, was, wasaud} end
redis.call('HSET', K_CONFIG, 'phase', phase, 'audience', audience)
return {'ok', 1, was, wasaud}
