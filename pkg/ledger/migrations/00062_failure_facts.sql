-- The fact of a failed payment (docs/ledger.md, "Write path"): the time
-- of the payment_failed the failure webhook publishes for it (failed_at,
-- the time Redis released the hold; NULL when the failure released none
-- and has no fact), fixed with the payment's first failure together with
-- its reason, seat and sequence, so that every copy of the fact is the
-- same; and failure_outbox, the failed payments whose fact Kafka has not
-- acknowledged yet, written in the first failure's own statement and
-- deleted once Kafka acknowledged it. The sweep of payment-webhook
-- publishes what is left (ledger.OrderPublisher, with order_outbox).
-- Failures written before have no time recorded and no outbox row: their
-- webhooks answered 2xx only once Kafka had their fact, or never did.

-- +goose Up
ALTER TABLE payments ADD COLUMN failed_at timestamptz;

CREATE TABLE failure_outbox (
    payment_id text        PRIMARY KEY REFERENCES payments (payment_id),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE failure_outbox;
ALTER TABLE payments DROP COLUMN failed_at;
