-- The secret seeds of an event's pre-queue draws (docs/fairness.md "The
-- draw", "Rebuilds"): per event and phase ('' for the event's own
-- pre-queue, a phase id for a later phase's) the seed Redis drew and its
-- commitment, published before the sale. The first seed recorded for a
-- draw stays, so a rebuild of Redis puts back the seed the published
-- commitment is for instead of making a new one.

-- +goose Up
CREATE TABLE draw_seeds (
    event_id    text        NOT NULL REFERENCES events (id),
    phase       text        NOT NULL DEFAULT '',
    seed        text        NOT NULL,
    commitment  text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, phase)
);

-- +goose Down
DROP TABLE draw_seeds;
