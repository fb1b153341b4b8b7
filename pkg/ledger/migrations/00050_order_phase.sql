-- The phase of the sale current when an order was sold (docs/ledger.md,
-- "Phases"): the sale report's breakdown by phase and the phase of the
-- booking_completed fact. '' for no phase (and for orders sold before
-- phases were recorded with them). And what a payment charges each of
-- its seats (NULL: not known), which its order's lines keep when the
-- prices change before the payment completes (a phase's end).

-- +goose Up
ALTER TABLE orders ADD COLUMN phase text NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN seat_prices bigint[];

-- +goose Down
ALTER TABLE payments DROP COLUMN seat_prices;
ALTER TABLE orders DROP COLUMN phase;
