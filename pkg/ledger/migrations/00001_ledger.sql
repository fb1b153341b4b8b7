-- The ledger's first schema: events, payments, orders (docs/ledger.md).
-- Applied by pressly/goose (pkg/ledger.Migrate); never edit an applied
-- migration, add the next file instead.

-- +goose Up
CREATE TABLE events (
    id             text PRIMARY KEY,
    name           text        NOT NULL,
    -- seat ids in display order (rows x seats_per_row expanded, or explicit)
    seats          text[]      NOT NULL,
    rows_count     integer     NOT NULL DEFAULT 0,
    seats_per_row  integer     NOT NULL DEFAULT 0,
    capacity       integer     NOT NULL,
    hold_ms        bigint      NOT NULL,
    grace_ms       bigint      NOT NULL,
    sales_start    timestamptz,
    sales_end      timestamptz,
    batch_size     integer     NOT NULL,
    abandon_ms     bigint      NOT NULL DEFAULT 0,
    paused         boolean     NOT NULL DEFAULT false,
    -- how often the event's Redis state was rebuilt from here
    restores       integer     NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- Every payment id the gateway issued, written before the provider hears
-- of it, and its outcome once a webhook arrives.
CREATE TABLE payments (
    payment_id  text PRIMARY KEY,
    event_id    text        NOT NULL,
    user_id     text        NOT NULL,
    seat_id     text        NOT NULL DEFAULT '',
    sequence    bigint      NOT NULL DEFAULT 0,
    amount      bigint      NOT NULL DEFAULT 0,
    currency    text        NOT NULL DEFAULT '',
    outcome     text        NOT NULL DEFAULT 'initiated'
                CHECK (outcome IN ('initiated', 'succeeded', 'late', 'failed')),
    reason      text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payments_event ON payments (event_id);

-- One row per successful payment: a sold ticket (completed), or money to
-- give back (refund_due, then refunded).
CREATE TABLE orders (
    order_id      text PRIMARY KEY,
    payment_id    text        NOT NULL UNIQUE,
    event_id      text        NOT NULL,
    user_id       text        NOT NULL,
    seat_id       text        NOT NULL,
    sequence      bigint      NOT NULL DEFAULT 0,
    amount        bigint      NOT NULL DEFAULT 0,
    currency      text        NOT NULL DEFAULT '',
    status        text        NOT NULL CHECK (status IN ('completed', 'refund_due', 'refunded')),
    refund_reason text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    refunded_at   timestamptz
);
-- A seat is sold at most once, whatever Redis says.
CREATE UNIQUE INDEX orders_seat_sold ON orders (event_id, seat_id) WHERE status = 'completed';
CREATE INDEX orders_user ON orders (user_id, created_at DESC);
CREATE INDEX orders_event ON orders (event_id, created_at);
CREATE INDEX orders_refund_due ON orders (created_at) WHERE status = 'refund_due';

-- +goose Down
DROP TABLE orders;
DROP TABLE payments;
DROP TABLE events;
