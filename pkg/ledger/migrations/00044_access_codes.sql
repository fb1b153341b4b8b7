-- Access codes of presales (docs/ledger.md, "Access codes"). A code is
-- kept as its digest only (HMAC-SHA256 with the gateway's key,
-- booking.CodeDigest): a copy of the database does not give the codes
-- back. access_code_batches has one row per generation (who, when, how
-- many, for which phase); access_codes one per code with its uses and
-- the user it is bound to; code_redemptions one per join that used a
-- code (its Kafka fact code_redeemed; published records Kafka's
-- acknowledgement, the gateway's sweep publishes what a crash or an
-- outage left). A rebuild of the event loads the codes again with their
-- uses and users (ledger.Restorer).

-- +goose Up
CREATE TABLE access_code_batches (
    id         bigserial PRIMARY KEY,
    event_id   text        NOT NULL REFERENCES events (id),
    phase      text        NOT NULL DEFAULT '', -- '' every phase
    count      integer     NOT NULL CHECK (count > 0),
    uses       integer     NOT NULL CHECK (uses > 0),
    seats      integer     NOT NULL DEFAULT 0 CHECK (seats >= 0), -- 0: the event's max_seats
    expires_at timestamptz,
    actor      text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE access_codes (
    id         bigserial PRIMARY KEY,
    batch_id   bigint      NOT NULL REFERENCES access_code_batches (id),
    event_id   text        NOT NULL REFERENCES events (id),
    digest     text        NOT NULL UNIQUE, -- hex HMAC-SHA256 of the code, 128 bits
    used       integer     NOT NULL DEFAULT 0,
    user_id    text        NOT NULL DEFAULT '' -- bound at the first redemption
);
CREATE INDEX access_codes_event ON access_codes (event_id, id);

CREATE TABLE code_redemptions (
    code_id     bigint      NOT NULL REFERENCES access_codes (id),
    use_no      integer     NOT NULL, -- which of the code's uses, from 1
    event_id    text        NOT NULL,
    user_id     text        NOT NULL,
    sequence    bigint      NOT NULL, -- the join's
    phase       text        NOT NULL DEFAULT '',
    redeemed_at timestamptz NOT NULL,
    published   boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (code_id, use_no)
);
CREATE INDEX code_redemptions_unpublished ON code_redemptions (redeemed_at) WHERE NOT published;

-- +goose Down
DROP TABLE code_redemptions;
DROP TABLE access_codes;
DROP TABLE access_code_batches;
