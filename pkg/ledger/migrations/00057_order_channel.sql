-- The channel an order was sold through, and for a box-office sale the
-- operator who sold it and the walk-up customer's reference (docs/ledger.md,
-- "Box-office sales"): the sale report's breakdown by channel and the
-- channel of the booking_completed fact. '' for an order sold to a fan
-- through the queue (and for orders sold before channels were recorded).

-- +goose Up
ALTER TABLE orders ADD COLUMN channel text NOT NULL DEFAULT '',
    ADD COLUMN sold_by text NOT NULL DEFAULT '',
    ADD COLUMN customer_ref text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE orders DROP COLUMN customer_ref, DROP COLUMN sold_by, DROP COLUMN channel;
