-- The facts of an order (docs/ledger.md, "Write path"): the fact the
-- success webhook publishes for it (fact: booking_completed or
-- payment_late), that fact's time (fact_at, the time Redis classified
-- the payment) and the event_sold_out its sale caused (sold_out_at),
-- fixed when the order is written, so that every copy of the facts is the
-- same; and order_outbox, the orders whose facts Kafka has not
-- acknowledged yet, written in the order's own statement and deleted
-- once Kafka acknowledged them. The sweep of payment-webhook publishes
-- what is left (ledger.OrderPublisher). Orders written before have no
-- fact recorded and no outbox row: their webhooks answered 2xx only once
-- Kafka had their facts, or never did.

-- +goose Up
ALTER TABLE orders
    ADD COLUMN fact        text NOT NULL DEFAULT '',
    ADD COLUMN fact_at     timestamptz,
    ADD COLUMN sold_out_at timestamptz;

CREATE TABLE order_outbox (
    order_id   text        PRIMARY KEY REFERENCES orders (order_id),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE order_outbox;
ALTER TABLE orders DROP COLUMN fact, DROP COLUMN fact_at, DROP COLUMN sold_out_at;
