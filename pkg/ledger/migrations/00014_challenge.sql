-- The front door's join challenge ('none' or 'pow', the proof-of-work
-- the gateway asks for before a join); early_join_ms (00013) became
-- patchable at the same time and needs no change here.

-- +goose Up
ALTER TABLE events ADD COLUMN challenge text NOT NULL DEFAULT 'none';

-- +goose Down
ALTER TABLE events DROP COLUMN challenge;
