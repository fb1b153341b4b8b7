-- What a scheduled phase's end does to the fans waiting, an event setting
-- of its own (on_phase_change: keep or leave), settable at creation and
-- by an update as well as with a schedule. An event with a schedule takes
-- the setting its schedule was saved with.

-- +goose Up
ALTER TABLE events ADD COLUMN on_phase_change text NOT NULL DEFAULT 'keep'
    CHECK (on_phase_change IN ('keep', 'leave'));
UPDATE events e SET on_phase_change = s.schedule->>'on_phase_change'
    FROM event_phase_schedules s
    WHERE s.event_id = e.id AND s.schedule->>'on_phase_change' IN ('keep', 'leave');

-- +goose Down
ALTER TABLE events DROP COLUMN on_phase_change;
