-- Seats operators keep off sale (docs/ledger.md, "Holds and kills"): held
-- for a purpose (production, artist, sponsor, accessibility) or killed,
-- never for sale. One row per seat so marked, with who marked it and
-- when; a release deletes the row (the audit trail, operator_actions,
-- keeps the history). A rebuild of the event from the ledger marks these
-- seats again (ledger.Restorer).

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

-- +goose Down
DROP TABLE seat_marks;
