-- The payment provider's health (docs/runbook.md "Payment provider
-- outage"). Whether it confirms the payments it was asked for
-- (ledger.OldestUnconfirmed): the payments still waiting for their
-- webhook, oldest first, and the webhooks that arrived, newest first.
-- provider_outages: one row per outage of one event, from when its hold
-- clocks stopped (paused_since, Redis's clock, also the sequence of its
-- provider_degraded and provider_recovered facts) to when they restarted,
-- who found it and who ended it (operator, breaker, unconfirmed, or
-- max_outage when it lasted longer than PROVIDER_OUTAGE_MAX).

-- +goose Up
CREATE INDEX payments_unconfirmed ON payments (created_at) WHERE outcome = 'initiated';
CREATE INDEX payments_confirmed ON payments (updated_at) WHERE outcome <> 'initiated';

CREATE TABLE provider_outages (
    event_id       text        NOT NULL,
    paused_since   timestamptz NOT NULL,
    degraded_by    text        NOT NULL DEFAULT '',
    holds_paused   bigint      NOT NULL DEFAULT 0,
    recovered_at   timestamptz,
    recovered_by   text        NOT NULL DEFAULT '',
    holds_resumed  bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (event_id, paused_since)
);

-- +goose Down
DROP TABLE provider_outages;
DROP INDEX payments_confirmed;
DROP INDEX payments_unconfirmed;
