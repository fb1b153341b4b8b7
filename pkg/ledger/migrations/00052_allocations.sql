-- Seats allocated to a sales channel (docs/ledger.md, "Allocations"):
-- a row of seat_marks with mark 'allocate' and the channel as its
-- purpose, with who allocated it and when; the end of a channel's
-- allocation (at its release time or by an operator) deletes its rows
-- and is a change 'release_allocation' of seat_mark_changes (its fact
-- allocation_released; seats_allocated for 'allocate'). allocation_releases
-- keeps each channel's release time; a rebuild sets it again, and the
-- gateway's sweep asks Redis (its clock decides) to end the allocations
-- whose time has come.

-- +goose Up
ALTER TABLE seat_marks DROP CONSTRAINT seat_marks_mark_check;
ALTER TABLE seat_marks ADD CONSTRAINT seat_marks_mark_check CHECK (mark IN ('hold', 'kill', 'allocate'));
ALTER TABLE seat_mark_changes DROP CONSTRAINT seat_mark_changes_mark_check;
ALTER TABLE seat_mark_changes ADD CONSTRAINT seat_mark_changes_mark_check
    CHECK (mark IN ('hold', 'kill', 'release', 'allocate', 'release_allocation'));

CREATE TABLE allocation_releases (
    event_id   text        NOT NULL REFERENCES events (id),
    channel    text        NOT NULL,
    release_at timestamptz NOT NULL,
    actor      text        NOT NULL, -- the operator who set it
    set_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, channel)
);
-- the sweep's work: release times, soonest first
CREATE INDEX allocation_releases_at ON allocation_releases (release_at);

-- +goose Down
DROP TABLE allocation_releases;
DELETE FROM seat_mark_changes WHERE mark IN ('allocate', 'release_allocation');
DELETE FROM seat_marks WHERE mark = 'allocate';
ALTER TABLE seat_mark_changes DROP CONSTRAINT seat_mark_changes_mark_check;
ALTER TABLE seat_mark_changes ADD CONSTRAINT seat_mark_changes_mark_check CHECK (mark IN ('hold', 'kill', 'release'));
ALTER TABLE seat_marks DROP CONSTRAINT seat_marks_mark_check;
ALTER TABLE seat_marks ADD CONSTRAINT seat_marks_mark_check CHECK (mark IN ('hold', 'kill'));
