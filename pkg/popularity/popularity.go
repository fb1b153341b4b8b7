// Package popularity keeps the ranking of concerts by completed bookings:
// a consumer group reads booking_completed from Kafka and adds
// one to the concert's score in a Redis sorted set, and Top reads the
// ranking for the gateway's GET /api/events/popular. Counting happens only
// after the booking is committed (the event is published after payment
// success), and each message counts once even when Kafka redelivers it: the
// Lua script popularity_count remembers the envelope id for a TTL.
package popularity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/redisfn"
)

// countFn is the library function of lua/popularity_count.lua, called
// with pkg/redisfn; see its header for KEYS, ARGV and replies.
var countFn = lua.Function("popularity_count")

// DefaultSeenTTL is how long a counted message id is remembered. A message
// redelivered after that counts again, so it must outlast every redelivery
// window (uncommitted offsets are redelivered within minutes; resetting the
// group's offsets replays further and is out of scope).
const DefaultSeenTTL = 7 * 24 * time.Hour

// Entry is one concert of the ranking.
type Entry struct {
	EventID  string
	Bookings int64
}

// Counter counts completed bookings into the ranking (NewCounter).
type Counter = redisfn.Counter[events.Event]

// ErrNotBookingCompleted is returned by Count for any other event type.
var ErrNotBookingCompleted = errors.New("popularity: not a booking_completed event")

// NewCounter returns a counter on rdb under prefix ("" = DefaultPrefix);
// seenTTL <= 0 means DefaultSeenTTL. Its Count adds a booking_completed
// fact to its concert's score, unless the message with the fact's id was
// counted before: one per seat sold (an order of several seats carries
// them in seat_id joined by ',').
func NewCounter(rdb redis.Cmdable, prefix string, seenTTL time.Duration) *Counter {
	if seenTTL <= 0 {
		seenTTL = DefaultSeenTTL
	}
	prefix = orDefault(prefix)
	return redisfn.NewCounter(rdb, countFn, seenTTL, func(e events.Event, ttl int64) ([]string, []any, error) {
		if e.Type != events.TopicBookingCompleted {
			return nil, nil, fmt.Errorf("%w: %s", ErrNotBookingCompleted, e.Type)
		}
		return []string{RankingKey(prefix), SeenKey(prefix, e.ID)},
			[]any{e.EventID, ttl, max(1, len(booking.SplitSeats(e.SeatID)))}, nil
	})
}

// Top returns the n concerts with the most completed bookings, most first
// (ties: Redis order, event_id descending). n <= 0 returns nothing.
func Top(ctx context.Context, rdb redis.Cmdable, prefix string, n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	zs, err := rdb.ZRevRangeWithScores(ctx, RankingKey(prefix), 0, int64(n-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("read popularity ranking: %w", err)
	}
	out := make([]Entry, 0, len(zs))
	for _, z := range zs {
		id, _ := z.Member.(string)
		out = append(out, Entry{EventID: id, Bookings: int64(z.Score)})
	}
	return out, nil
}

// Config configures the consumer (NewConsumer).
type Config struct {
	Brokers []string      // Kafka bootstrap addresses
	GroupID string        // consumer group; default "popularity"
	Prefix  string        // Redis key prefix; default DefaultPrefix
	SeenTTL time.Duration // default DefaultSeenTTL
	// StartOffset for a group without committed offsets: kafka.FirstOffset
	// (default; the ranking counts the whole retained history) or
	// kafka.LastOffset.
	StartOffset int64
	// Kafka is TLS, SASL and the topic prefix (zero: plaintext, no prefix).
	Kafka events.ClientConfig
}

// NewConsumer returns the popularity consumer, booking_completed in and
// ranking out, writing to rdb: its Run consumes until ctx is cancelled
// (then nil) or consuming fails. A Redis error is retried with backoff;
// the offset is committed only after the booking was counted (or
// recognised as counted). log may be nil.
func NewConsumer(cfg Config, rdb redis.Cmdable, log *zap.Logger) events.Tally {
	opts := []events.ConsumerOption{events.WithConsumerClient(cfg.Kafka)}
	if cfg.StartOffset != 0 {
		opts = append(opts, events.WithStartOffset(cfg.StartOffset))
	}
	return events.Tally{Brokers: cfg.Brokers, GroupID: cmp.Or(cfg.GroupID, "popularity"),
		Topics: []string{events.TopicBookingCompleted}, Count: NewCounter(rdb, cfg.Prefix, cfg.SeenTTL).Count,
		Log: log, Options: opts}
}
