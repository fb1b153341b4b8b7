-- The signature of a beacon round whose value is taken from it (drand
-- quicknet): kept with the value, so a rebuild keeps it and the draw
-- document goes on publishing it ('' for a beacon whose values are not
-- checked, and for a value supplied before).

-- +goose Up
ALTER TABLE draw_beacons ADD COLUMN signature text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE draw_beacons DROP COLUMN signature;
