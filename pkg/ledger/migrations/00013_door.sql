-- The front door's event settings: the rate cap and the
-- pre-queue's opening (the draw's seed lives in Redis only: a restore
-- drops waiting users, so a restored event draws with a new seed).
-- (Numbered after the issue so that migrations added on other branches at
-- the same time do not collide; goose applies them in version order.)

-- +goose Up
ALTER TABLE events ADD COLUMN admit_per_minute integer NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN early_join_ms bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE events DROP COLUMN admit_per_minute;
ALTER TABLE events DROP COLUMN early_join_ms;
