-- seq_base: the join sequence base of each rebuild of an event
-- (restore.go): the next rebuild starts at least SeqBaseGap above it,
-- whatever the clocks say, so join sequences (and the fact ids built from
-- them) never repeat. revision, last_change, changed_at: the settings
-- changes of an event (UpdateEvent), numbered, so each change is one
-- event_updated fact (docs/events-kafka.md) that a retry republishes as it
-- was.

-- +goose Up
ALTER TABLE events ADD COLUMN seq_base bigint NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN revision bigint NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN last_change text NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN changed_at timestamptz;

-- +goose Down
ALTER TABLE events DROP COLUMN changed_at;
ALTER TABLE events DROP COLUMN last_change;
ALTER TABLE events DROP COLUMN revision;
ALTER TABLE events DROP COLUMN seq_base;
