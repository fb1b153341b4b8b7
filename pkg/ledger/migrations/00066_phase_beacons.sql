-- A beacon round per draw: a later phase's pre-queue may commit its own
-- draw to a round too (docs/fairness.md "The beacon"). phase '' is the
-- event's own pre-queue's, as in draw_seeds.

-- +goose Up
ALTER TABLE draw_beacons ADD COLUMN phase text NOT NULL DEFAULT '';
ALTER TABLE draw_beacons DROP CONSTRAINT draw_beacons_pkey;
ALTER TABLE draw_beacons ADD PRIMARY KEY (event_id, phase);

-- +goose Down
DELETE FROM draw_beacons WHERE phase <> '';
ALTER TABLE draw_beacons DROP CONSTRAINT draw_beacons_pkey;
ALTER TABLE draw_beacons DROP COLUMN phase;
ALTER TABLE draw_beacons ADD PRIMARY KEY (event_id);
