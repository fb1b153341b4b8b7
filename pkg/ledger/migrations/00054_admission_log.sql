-- The admission log of every event (docs/fairness.md "The admission
-- log"), as the gateways chain it from Redis: the record a rebuild of
-- Redis continues the chain from, and the pages Redis no longer holds.
-- admission_salts keeps each event's fairness salt, the secret behind the
-- entries' user hashes, so a rebuilt event names its users as before.

-- +goose Up
CREATE TABLE admission_log (
    event_id  text   NOT NULL,
    idx       bigint NOT NULL,
    seq       bigint NOT NULL,
    user_hash text   NOT NULL,
    at_ms     bigint NOT NULL,
    reason    text   NOT NULL,
    prev      text   NOT NULL,
    hash      text   NOT NULL,
    PRIMARY KEY (event_id, idx)
);

CREATE TABLE admission_salts (
    event_id  text PRIMARY KEY,
    fair_salt text NOT NULL
);

-- +goose Down
DROP TABLE admission_salts;
DROP TABLE admission_log;
