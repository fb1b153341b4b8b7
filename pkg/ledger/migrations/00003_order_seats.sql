-- Orders of several seats, in priced sections (docs/ledger.md).
-- An event keeps its sections, price, currency and seats per order; an
-- order keeps one line per seat with its price in order_seats, whose
-- partial unique index sells a seat at most once across orders of one or
-- many seats. orders.seat_id keeps the seats joined by ',' (the engine's
-- form: a one-seat order's is its seat id, as before).

-- +goose Up
ALTER TABLE events
    ADD COLUMN sections     jsonb   NOT NULL DEFAULT '[]',
    ADD COLUMN price_cents  bigint  NOT NULL DEFAULT 0,
    ADD COLUMN currency     text    NOT NULL DEFAULT '',
    ADD COLUMN max_seats    integer NOT NULL DEFAULT 0;

CREATE TABLE order_seats (
    order_id    text    NOT NULL REFERENCES orders (order_id),
    position    integer NOT NULL,
    event_id    text    NOT NULL,
    seat_id     text    NOT NULL,
    price_cents bigint  NOT NULL DEFAULT 0,
    -- the order's status, kept equal by the trigger below
    status      text    NOT NULL,
    PRIMARY KEY (order_id, position)
);
-- A seat is sold at most once, whatever Redis says, in orders of any size.
CREATE UNIQUE INDEX order_seats_sold ON order_seats (event_id, seat_id) WHERE status = 'completed';

-- the orders written before: one seat each, at the order's amount
INSERT INTO order_seats (order_id, position, event_id, seat_id, price_cents, status)
    SELECT order_id, 0, event_id, seat_id, amount, status FROM orders;

-- +goose StatementBegin
CREATE FUNCTION order_seats_follow_status() RETURNS trigger AS $$
BEGIN
    UPDATE order_seats SET status = NEW.status WHERE order_id = NEW.order_id;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER order_seats_status AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION order_seats_follow_status();

-- +goose Down
DROP TRIGGER order_seats_status ON orders;
DROP FUNCTION order_seats_follow_status();
DROP TABLE order_seats;
ALTER TABLE events DROP COLUMN sections, DROP COLUMN price_cents, DROP COLUMN currency, DROP COLUMN max_seats;
