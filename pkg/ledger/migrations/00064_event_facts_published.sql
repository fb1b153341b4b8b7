-- Whether an event's event_created fact reached Kafka, and up to which
-- settings revision its event_updated facts did: the gateway's sweep
-- publishes what a request that stopped before its publish left
-- (EventFactPublisher). Events made before this column count as
-- published.

-- +goose Up
ALTER TABLE events ADD COLUMN created_published boolean NOT NULL DEFAULT true;
ALTER TABLE events ALTER COLUMN created_published SET DEFAULT false;
ALTER TABLE events ADD COLUMN published_revision bigint NOT NULL DEFAULT 0;
UPDATE events SET published_revision = revision;

-- +goose Down
ALTER TABLE events DROP COLUMN created_published, DROP COLUMN published_revision;
