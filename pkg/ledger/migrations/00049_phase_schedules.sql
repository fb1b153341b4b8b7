-- Scheduled phases (docs/ledger.md, "Phases"): an event's sale as an
-- ordered list of phases, each with its window, audience and settings
-- (booking.Schedule as JSON), saved by an operator and applied by the
-- gateways at Redis's clock; a rebuild loads it again. A scheduled change
-- of the current phase is a row of event_phase_changes like a manual one
-- (actor 'schedule'); between two phases the audience is 'closed'.

-- +goose Up
CREATE TABLE event_phase_schedules (
    event_id    text        PRIMARY KEY REFERENCES events (id),
    schedule    jsonb       NOT NULL,
    actor       text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE event_phase_changes DROP CONSTRAINT event_phase_changes_audience_check,
    ADD CONSTRAINT event_phase_changes_audience_check CHECK (audience IN ('public', 'code', 'registered', 'closed'));

-- +goose Down
ALTER TABLE event_phase_changes DROP CONSTRAINT event_phase_changes_audience_check,
    ADD CONSTRAINT event_phase_changes_audience_check CHECK (audience IN ('public', 'code', 'registered'));
DROP TABLE event_phase_schedules;
