-- Wheelchair spaces and companion seats (docs/ledger.md "Allocations"):
-- a seat allocated to the channel wheelchair or companion is of that kind
-- for good, also once its allocation ended and its seat_marks row went,
-- so a rebuild of Redis shows it as one again. Allocating it to the other
-- of the two channels changes its kind.

-- +goose Up
CREATE TABLE accessible_seats (
    event_id text        NOT NULL REFERENCES events (id),
    seat_id  text        NOT NULL,
    kind     text        NOT NULL CHECK (kind IN ('wheelchair', 'companion')),
    actor    text        NOT NULL, -- the operator who allocated it
    set_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, seat_id)
);
-- the seats allocated to one of them now, then those whose allocation
-- ended (the last such allocation of each seat, from the changes)
INSERT INTO accessible_seats (event_id, seat_id, kind, actor)
    SELECT event_id, seat_id, purpose, actor FROM seat_marks
    WHERE mark = 'allocate' AND purpose IN ('wheelchair', 'companion');
INSERT INTO accessible_seats (event_id, seat_id, kind, actor)
    SELECT DISTINCT ON (c.event_id, s.seat_id) c.event_id, s.seat_id, c.purpose, c.actor
    FROM seat_mark_changes c CROSS JOIN LATERAL unnest(c.seat_ids) AS s (seat_id)
    WHERE c.mark = 'allocate' AND c.purpose IN ('wheelchair', 'companion')
    ORDER BY c.event_id, s.seat_id, c.id DESC
    ON CONFLICT (event_id, seat_id) DO NOTHING;

-- +goose Down
DROP TABLE accessible_seats;
