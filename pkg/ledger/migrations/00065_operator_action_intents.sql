-- The audit trail's write-ahead entries: one per admin request that may
-- change something, written before the request acts and removed in the
-- transaction that writes its operator_actions record, or when it ends
-- having changed nothing. One left behind is a request that stopped
-- partway (a gateway killed, a record that could not be written); the
-- operator_action sweep turns it into a request.interrupted record
-- (operators.Store.Settle), so the trail misses no change.

-- +goose Up
CREATE TABLE operator_action_intents (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text NOT NULL,
    via         text NOT NULL,
    role        text NOT NULL,
    method      text NOT NULL,
    route       text NOT NULL,
    path        text NOT NULL,
    event_id    text NOT NULL DEFAULT '',
    remote_addr text NOT NULL DEFAULT '',
    request_id  text NOT NULL DEFAULT ''
);
CREATE INDEX operator_action_intents_at ON operator_action_intents (at);

-- +goose Down
DROP TABLE operator_action_intents;
