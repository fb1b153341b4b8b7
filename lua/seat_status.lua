-- seat_status: (re)build the seat status string and an explicit map's seat index from seats.
-- ARGV: none
-- Replies: {'ok', status} | {'event_not_found'}
-- KEYS: config, seats, seatmap, status, seatidx (ops.go)
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
return {'ok', status_whole()}
