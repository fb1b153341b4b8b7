-- The join sequence base of each rebuild of an event (restore.go): the
-- next rebuild starts at least SeqBaseGap above it, whatever the clocks
-- say, so join sequences (and the fact ids built from them) never repeat.

-- +goose Up
ALTER TABLE events ADD COLUMN seq_base bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE events DROP COLUMN seq_base;
