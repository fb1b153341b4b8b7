-- The phase of the sale current when an order was sold (docs/ledger.md,
-- "Phases"): the sale report's breakdown by phase and the phase of the
-- booking_completed fact. '' for no phase (and for orders sold before
-- phases were recorded with them).

-- +goose Up
ALTER TABLE orders ADD COLUMN phase text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE orders DROP COLUMN phase;
