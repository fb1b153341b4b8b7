-- Operator accounts, their sessions and API tokens, and the audit trail of
-- operator actions (pkg/operators, docs/operators.md). The audit trail is
-- append-only for every role: a trigger refuses UPDATE, DELETE and
-- TRUNCATE of operator_actions, whoever asks. operator_action_outbox holds
-- the actions whose Kafka fact (operator_action) is not published yet; it
-- is written in the same transaction as the action's row and emptied once
-- Kafka acknowledged the fact.

-- +goose Up
CREATE TABLE operator_accounts (
    name                text PRIMARY KEY,
    role                text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    password_hash       text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    created_by          text NOT NULL,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    password_changed_at timestamptz NOT NULL DEFAULT now(),
    disabled_at         timestamptz
);

-- the session manager's store (github.com/alexedwards/scs/pgxstore): the
-- SHA-256 of each session cookie's token, never the token itself
CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

-- what an operator and an admin see of a session; the cookie's session
-- names its row, and a revoked or expired row ends the session
CREATE TABLE operator_sessions (
    id           text PRIMARY KEY,
    account      text NOT NULL REFERENCES operator_accounts (name),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    remote_addr  text NOT NULL DEFAULT '',
    user_agent   text NOT NULL DEFAULT '',
    revoked_at   timestamptz,
    revoked_by   text
);
CREATE INDEX operator_sessions_account ON operator_sessions (account, created_at DESC);

-- API tokens for automation: the SHA-256 of the token, never the token
CREATE TABLE operator_tokens (
    id           text PRIMARY KEY,
    account      text NOT NULL REFERENCES operator_accounts (name),
    name         text NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   text NOT NULL,
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    revoked_by   text
);
CREATE INDEX operator_tokens_account ON operator_tokens (account, created_at DESC);

CREATE TABLE operator_actions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text NOT NULL,
    via         text NOT NULL,
    role        text NOT NULL,
    action      text NOT NULL,
    event_id    text NOT NULL DEFAULT '',
    target      text NOT NULL DEFAULT '',
    remote_addr text NOT NULL DEFAULT '',
    request_id  text NOT NULL DEFAULT '',
    before      jsonb,
    after       jsonb
);
CREATE INDEX operator_actions_actor ON operator_actions (actor, id DESC);
CREATE INDEX operator_actions_event ON operator_actions (event_id, id DESC);
CREATE INDEX operator_actions_action ON operator_actions (action, id DESC);
CREATE INDEX operator_actions_at ON operator_actions (at);

-- +goose StatementBegin
CREATE FUNCTION operator_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'operator_actions is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER operator_actions_no_update BEFORE UPDATE OR DELETE ON operator_actions
    FOR EACH ROW EXECUTE FUNCTION operator_actions_append_only();
CREATE TRIGGER operator_actions_no_truncate BEFORE TRUNCATE ON operator_actions
    FOR EACH STATEMENT EXECUTE FUNCTION operator_actions_append_only();
REVOKE UPDATE, DELETE, TRUNCATE ON operator_actions FROM PUBLIC;

CREATE TABLE operator_action_outbox (
    action_id  bigint PRIMARY KEY REFERENCES operator_actions (id),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE operator_action_outbox;
DROP TABLE operator_actions;
DROP FUNCTION operator_actions_append_only();
DROP TABLE operator_tokens;
DROP TABLE operator_sessions;
DROP TABLE sessions;
DROP TABLE operator_accounts;
