-- The no-orphan rule: manual seat selections that would leave a single
-- free seat in a row are refused while another choice fits.

-- +goose Up
ALTER TABLE events ADD COLUMN no_orphan_rule boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE events DROP COLUMN no_orphan_rule;
