-- The sales window's event settings: whether users in the room at the
-- sales end finish within their hold (finish_after_end), and until when
-- a fan may cancel their own sold order (refundable_until, NULL: never).

-- +goose Up
ALTER TABLE events ADD COLUMN finish_after_end boolean NOT NULL DEFAULT true,
    ADD COLUMN refundable_until timestamptz;

-- +goose Down
ALTER TABLE events DROP COLUMN finish_after_end, DROP COLUMN refundable_until;
