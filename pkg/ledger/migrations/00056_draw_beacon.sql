-- The public randomness beacon an event's draw is committed to
-- (docs/fairness.md "The beacon"): the round the operator committed before
-- the pre-queue opened, the beacon's name for fans and, once supplied, the
-- round's value, so a rebuild of Redis draws with the same inputs.

-- +goose Up
CREATE TABLE draw_beacons (
    event_id     text        PRIMARY KEY,
    round        bigint      NOT NULL CHECK (round > 0),
    source       text        NOT NULL DEFAULT '',
    value        text        NOT NULL DEFAULT '',
    committed_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE draw_beacons;
