-- The waitlist as the system of record keeps it: the event's settings
-- (offer_ms, 0: no waitlist; waitlist_early: fans may join before the
-- sell-out) and one row per fan's place (their join sequence and the seats
-- they want), closed when the fan declines an offer. A rebuild of Redis
-- puts the open places back in sequence order (docs/ledger.md "The
-- waitlist").

-- +goose Up
ALTER TABLE events ADD COLUMN offer_ms bigint NOT NULL DEFAULT 0,
    ADD COLUMN waitlist_early boolean NOT NULL DEFAULT false;

CREATE TABLE waitlist_places (
    event_id    text        NOT NULL REFERENCES events (id),
    user_id     text        NOT NULL,
    sequence    bigint      NOT NULL,
    seats       integer     NOT NULL CHECK (seats > 0),
    joined_at   timestamptz NOT NULL DEFAULT now(),
    declined_at timestamptz,
    PRIMARY KEY (event_id, user_id)
);

-- +goose Down
DROP TABLE waitlist_places;
ALTER TABLE events DROP COLUMN offer_ms, DROP COLUMN waitlist_early;
