-- The front door's event settings (issue 13): the rate cap.
-- (Numbered after the issue so that migrations added on other branches at
-- the same time do not collide; goose applies them in version order.)

-- +goose Up
ALTER TABLE events ADD COLUMN admit_per_minute integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE events DROP COLUMN admit_per_minute;
