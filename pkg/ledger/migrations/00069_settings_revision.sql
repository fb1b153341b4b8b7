-- The number of every settings change an admin made (UpdateEvent), even
-- one that changed nothing (events.revision counts only real changes).
-- Redis keeps what a change replaced, tagged with this number, until it
-- knows the ledger has the change: one whose transaction rolled back after
-- Redis took it is undone there (lua/update_event.lua).

-- +goose Up
ALTER TABLE events ADD COLUMN settings_rev bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE events DROP COLUMN settings_rev;
