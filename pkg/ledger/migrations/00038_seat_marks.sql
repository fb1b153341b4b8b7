-- Seats operators keep off sale (docs/ledger.md, "Holds and kills"): held
-- for a purpose (production, artist, sponsor, accessibility) or killed,
-- never for sale. seat_marks has one row per seat so marked, with who
-- marked it and when; a release deletes the row. seat_mark_changes has
-- one row per call that changed seats (a repeat changes none): its id
-- numbers the change's Kafka fact (seats_held, seats_killed,
-- seats_released), and published records Kafka's acknowledgement (the
-- gateway's sweep publishes what a crash or an outage left). A rebuild of the event from the ledger marks the
-- seats of seat_marks again (ledger.Restorer).

-- +goose Up
CREATE TABLE seat_marks (
    event_id   text        NOT NULL REFERENCES events (id),
    seat_id    text        NOT NULL,
    mark       text        NOT NULL CHECK (mark IN ('hold', 'kill')),
    purpose    text        NOT NULL DEFAULT '', -- a hold's purpose; '' for a kill
    actor      text        NOT NULL,            -- the operator who marked it
    marked_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, seat_id)
);

CREATE TABLE seat_mark_changes (
    id         bigserial PRIMARY KEY,
    event_id   text        NOT NULL REFERENCES events (id),
    mark       text        NOT NULL CHECK (mark IN ('hold', 'kill', 'release')),
    purpose    text        NOT NULL DEFAULT '',
    seat_ids   text[]      NOT NULL, -- the seats that changed
    actor      text        NOT NULL,
    published  boolean     NOT NULL DEFAULT false, -- its fact acknowledged by Kafka
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX seat_mark_changes_event ON seat_mark_changes (event_id, id);
-- the sweep's work: facts not acknowledged yet
CREATE INDEX seat_mark_changes_unpublished ON seat_mark_changes (id) WHERE NOT published;

-- +goose Down
DROP TABLE seat_mark_changes;
DROP TABLE seat_marks;
