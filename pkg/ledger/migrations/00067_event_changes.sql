-- Every settings change of an event, by revision (events.revision,
-- last_change and changed_at keep only the last): the event-fact sweep
-- publishes each change whose event_updated Kafka has not acknowledged,
-- in order, not only the last. Events changed before this table start
-- with their last change.

-- +goose Up
CREATE TABLE event_changes (
    event_id   text        NOT NULL REFERENCES events (id),
    revision   bigint      NOT NULL,
    change     text        NOT NULL,
    changed_at timestamptz NOT NULL,
    PRIMARY KEY (event_id, revision)
);
INSERT INTO event_changes (event_id, revision, change, changed_at)
    SELECT id, revision, last_change, changed_at FROM events WHERE revision > 0 AND changed_at IS NOT NULL;

-- +goose Down
DROP TABLE event_changes;
