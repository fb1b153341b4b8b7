-- enqueue.lua — join the queue for an event.
-- KEYS: the event key set (lib.lua)
--   reads:  active, config, rate, seq, state, ugrace, useq, waiting
--   writes: active, config, outbox, rate, seen, seq, state, ugrace, upay, useat, useq, waiting
--   and after them the abuse-limit keys, one per limit (lib.lua enqueue_joins)
-- ARGV: 1 user_id, 2 now_ms (an integer, written as given), 3 own (the number, from 1, of the limit that
--   is the joining user's own, booking.UserSubject; 0 or absent: none),
--   then from ARGV[4] per limit its interval_ms and burst
-- Replies:
--   {'ok', state, sequence, position, deadline_ms, created}
--     state 'waiting' (position >= 1) or 'active' (admitted at once because
--     the room had free capacity and nobody was waiting; deadline_ms set);
--     on a repeated join: the user's current state and created = 0.
--   {'event_not_found'} | {'sales_not_started'} | {'sales_ended'} | {'sold_out'}
--   {'rate_limited', retry_after_ms}: a limit refused the join (of an
--     existing event, before anything else; nothing changed)
-- Every join the limits allow is counted against each of them, except
-- that the join that places a user (created = 1) does not write the
-- user's own limit key when the user has none: the user's first request
-- needs no record to be judged (a subject without a key is allowed), and
-- writing one costs every arriving user a new key with an expiry, a third
-- of a join's limit cost (docs/benchmarks.md). The user's next request is
-- counted as if it were the first.
-- Pre-queue (config early_join_ms > 0 and draw_seed set): a join in
-- [sales_start_ms - early_join_ms, sales_start_ms) waits with the score
-- h - 2^53, h the first 13 hex digits (52 bits) of
-- sha1(draw_seed .. ':' .. user): pre-queued users are ordered by a random
-- permutation fixed by the committed seed (ties: by user id, ZSET order),
-- all ahead of later joiners (score = sequence >= 1). Their replies carry
-- position 0 (the rank stays secret until the start) and a seventh
-- element, sales_start_ms; the config's 'prequeued' counts them.
-- A user who finished a hold without buying (cancelled, expired, failed,
-- abandoned) may join again at the back; a completed user may not.
-- A waiting user is one entry of waiting (score = sequence): no state or
-- useq field (lib.lua); a pre-queued user's sequence is kept in useq.
-- Every new entry (created = 1) also writes the outbox entry
-- 'j:<sequence>' -> '<sequence>|<user>||<now_ms>', the booking_request fact
-- still to be published to Kafka (the gateway's relay publishes and
-- acknowledges it after answering; the safety net sweeps what it missed).
-- The join itself is lib.lua's enqueue_joins, which enqueue_batch.lua
-- runs for several joins in one call.
local steps, bursts, keys = {}, {}, {}
for s = 1, #KEYS - NKEYS do
  steps[s], bursts[s], keys[s] = tonumber(ARGV[2 + 2 * s]), tonumber(ARGV[3 + 2 * s]), s
end
return enqueue_joins({{user = ARGV[1], now = tonumber(ARGV[2]), now_s = ARGV[2], own = num(ARGV[3]), keys = keys}},
  steps, bursts)[1]
