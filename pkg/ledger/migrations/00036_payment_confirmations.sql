-- Whether the payment provider confirms the payments it was asked for
-- (ledger.OldestUnconfirmed, docs/runbook.md "Payment provider outage"):
-- the payments still waiting for their webhook, oldest first, and the
-- webhooks that arrived, newest first.

-- +goose Up
CREATE INDEX payments_unconfirmed ON payments (created_at) WHERE outcome = 'initiated';
CREATE INDEX payments_confirmed ON payments (updated_at) WHERE outcome <> 'initiated';

-- +goose Down
DROP INDEX payments_confirmed;
DROP INDEX payments_unconfirmed;
