-- A join's access-code use reaches the ledger from the join's outbox
-- entry, recorded before its code_redeemed fact is published (the outbox
-- entry stays until both are done): the outbox, not the ledger, keeps
-- which facts Kafka acknowledged.

-- +goose Up
DROP INDEX code_redemptions_unpublished;
ALTER TABLE code_redemptions DROP COLUMN published;

-- +goose Down
ALTER TABLE code_redemptions ADD COLUMN published boolean NOT NULL DEFAULT true;
CREATE INDEX code_redemptions_unpublished ON code_redemptions (redeemed_at) WHERE NOT published;
