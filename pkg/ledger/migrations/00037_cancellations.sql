-- Cancellations of sold tickets (docs/ledger.md, "Cancellations"). An
-- operator cancels a whole order or some of its seats with a reason: one
-- row here is the intent, written with the seats' new status in one
-- transaction before Redis or the payment provider hear of it; its
-- columns then record each later step (seats back on sale in Redis, the
-- provider's refund, the two Kafka facts), so a cancellation interrupted
-- anywhere is finished by the sweep (ledger.Canceller) from this row.
--
-- A cancelled seat's order_seats line has status 'cancelled': the
-- partial unique index order_seats_sold no longer counts it, so the seat
-- can be sold again, and restore and reconciliation leave it out. An
-- order all of whose seats are cancelled has status 'cancelled'; the
-- trigger that copies an order's status to its lines no longer
-- overwrites a cancelled line.

-- +goose Up
ALTER TABLE orders DROP CONSTRAINT orders_status_check,
    ADD CONSTRAINT orders_status_check CHECK (status IN ('completed', 'refund_due', 'refunded', 'cancelled'));

CREATE TABLE cancellations (
    id               bigserial PRIMARY KEY,
    order_id         text        NOT NULL REFERENCES orders (order_id),
    event_id         text        NOT NULL,
    user_id          text        NOT NULL,
    payment_id       text        NOT NULL,
    seat_ids         text[]      NOT NULL,
    amount           bigint      NOT NULL,
    currency         text        NOT NULL,
    whole            boolean     NOT NULL, -- the order's last seats: the order is cancelled
    reason           text        NOT NULL,
    actor            text        NOT NULL, -- the operator (or the fan) who cancelled
    released_at      timestamptz,          -- the seats are back on sale in Redis
    refund_status    text        NOT NULL DEFAULT 'pending' CHECK (refund_status IN ('pending', 'refunded')),
    refund_error     text        NOT NULL DEFAULT '', -- the provider's last refusal or failure
    refund_attempts  integer     NOT NULL DEFAULT 0,
    refunded_at      timestamptz,
    cancelled_published boolean  NOT NULL DEFAULT false, -- order_cancelled acknowledged by Kafka
    refund_published boolean     NOT NULL DEFAULT false, -- refund_issued acknowledged by Kafka
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cancellations_order ON cancellations (order_id, id);
-- the sweep's work: cancellations with a step left
CREATE INDEX cancellations_open ON cancellations (updated_at)
    WHERE released_at IS NULL OR refund_status <> 'refunded' OR NOT cancelled_published OR NOT refund_published;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION order_seats_follow_status() RETURNS trigger AS $$
BEGIN
    UPDATE order_seats SET status = NEW.status WHERE order_id = NEW.order_id AND status <> 'cancelled';
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION order_seats_follow_status() RETURNS trigger AS $$
BEGIN
    UPDATE order_seats SET status = NEW.status WHERE order_id = NEW.order_id;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
DROP TABLE cancellations;
ALTER TABLE orders DROP CONSTRAINT orders_status_check,
    ADD CONSTRAINT orders_status_check CHECK (status IN ('completed', 'refund_due', 'refunded'));
