-- The phases of an event's sale (docs/ledger.md, "Phases"): one row per
-- change of the event's current phase and audience made by an operator
-- (a repeat changes nothing and records nothing). Its id numbers the
-- change's Kafka facts (phase_started, and phase_ended of the phase
-- before); published records Kafka's acknowledgement (the gateway's sweep
-- publishes what a crash or an outage left). The latest row is the
-- event's current phase, which a rebuild sets again.

-- +goose Up
CREATE TABLE event_phase_changes (
    id              bigserial PRIMARY KEY,
    event_id        text        NOT NULL REFERENCES events (id),
    phase           text        NOT NULL, -- '' none
    audience        text        NOT NULL CHECK (audience IN ('public', 'code', 'registered')),
    previous_phase  text        NOT NULL,
    actor           text        NOT NULL,
    published       boolean     NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_phase_changes_event ON event_phase_changes (event_id, id);
CREATE INDEX event_phase_changes_unpublished ON event_phase_changes (id) WHERE NOT published;

-- +goose Down
DROP TABLE event_phase_changes;
