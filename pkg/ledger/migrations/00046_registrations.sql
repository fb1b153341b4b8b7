-- Registration before a sale (docs/ledger.md, "Registration"): fans
-- register for an event's registered phase during a window; at its end an
-- operator draws who is selected (from a seed committed when the window
-- was set, revealed by the draw: the pre-queue's rules) or takes them
-- first come. registration_windows has one row per event, registrations
-- one per fan (selected is null until the draw).

-- +goose Up
CREATE TABLE registration_windows (
    event_id    text        PRIMARY KEY REFERENCES events (id),
    phase       text        NOT NULL DEFAULT '',
    opens_at    timestamptz NOT NULL,
    closes_at   timestamptz NOT NULL CHECK (closes_at > opens_at),
    seed        text        NOT NULL, -- hex, secret until the draw
    commit      text        NOT NULL, -- hex SHA-256 of the seed, published
    actor       text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    method      text        CHECK (method IN ('draw', 'first_come')), -- set by the draw
    selected    integer,
    drawn_at    timestamptz,
    drawn_by    text
);

CREATE TABLE registrations (
    id            bigserial   PRIMARY KEY,
    event_id      text        NOT NULL REFERENCES events (id),
    user_id       text        NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT now(),
    selected      boolean,
    UNIQUE (event_id, user_id)
);

-- +goose Down
DROP TABLE registrations;
DROP TABLE registration_windows;
