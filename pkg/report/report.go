// Package report keeps a per-sale report: a Kafka consumer
// group reads every boxoffice topic and adds each fact, once per message
// id, to its sale's figures in Redis (lua/report_count.lua): counts per
// type, revenue and refunds per currency, time-in-queue and
// time-to-purchase distributions, admissions per minute. Read returns the
// report the gateway serves at GET /api/admin/events/{id}/report (JSON or
// CSV). docs/events-kafka.md, "Consumers", has the contract.
package report

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/redisfn"
)

// countFn is the library function of lua/report_count.lua, called with
// pkg/redisfn; see its header for KEYS, ARGV and replies.
var countFn = lua.Function("report_count")

// DefaultPrefix is the key prefix when none is configured.
const DefaultPrefix = "bo"

// DefaultSeenTTL is how long a counted message id is remembered (it must
// outlast every redelivery window, as popularity's).
const DefaultSeenTTL = 7 * 24 * time.Hour

// keys of one sale, all with the {report:<event_id>} hash tag.
func keys(prefix, eventID, messageID string) []string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	base := prefix + ":{report:" + eventID + "}:"
	return []string{base + "counts", base + "seen:" + messageID, base + "times", base + "queue",
		base + "purchase", base + "minutes"}
}

// Counter adds facts to their sale's report (NewCounter).
type Counter = redisfn.Counter[events.Event]

// NewCounter returns a counter on rdb under prefix ("" = DefaultPrefix);
// seenTTL <= 0 means DefaultSeenTTL. Its Count adds a fact to its sale's
// report unless a message with the fact's id was counted before.
func NewCounter(rdb redis.Cmdable, prefix string, seenTTL time.Duration) *Counter {
	if seenTTL <= 0 {
		seenTTL = DefaultSeenTTL
	}
	return redisfn.NewCounter(rdb, countFn, seenTTL, func(e events.Event, ttl int64) ([]string, []any, error) {
		return keys(prefix, e.EventID, e.ID), []any{e.Type, e.Sequence, e.OccurredAt.UnixMilli(), ttl, e.Amount, e.Currency}, nil
	})
}

// Distribution is a duration distribution in milliseconds, from buckets
// whose bounds grow by a factor of 2^(1/4) (bucketUpper): each percentile
// is its bucket's upper bound.
type Distribution struct {
	Count int64 `json:"count"`
	P50MS int64 `json:"p50_ms"`
	P90MS int64 `json:"p90_ms"`
	P99MS int64 `json:"p99_ms"`
}

// Minute is the admissions of one minute.
type Minute struct {
	Minute     time.Time `json:"minute"`
	Admissions int64     `json:"admissions"`
}

// Report is a sale's figures.
type Report struct {
	EventID string `json:"event_id"`
	// Facts per type, each fact once (every type of Topics).
	Counts map[string]int64 `json:"counts"`
	// Revenue and Refunds per currency, in minor units: the amounts of
	// booking_completed and payment_late.
	Revenue map[string]int64 `json:"revenue"`
	Refunds map[string]int64 `json:"refunds"`
	// Conversion at each step: admitted/joined, paying/admitted,
	// completed/paying, completed/joined (0 when the step had nobody).
	Conversion          map[string]float64 `json:"conversion"`
	TimeInQueue         Distribution       `json:"time_in_queue"`
	TimeToPurchase      Distribution       `json:"time_to_purchase"`
	AdmissionsPerMinute []Minute           `json:"admissions_per_minute"`
	// ByPhase is what each phase of the sale sold (the phase current at
	// each sale, from the ledger's orders; absent without a ledger).
	ByPhase []PhaseSales `json:"by_phase,omitempty"`
	// ByChannel is what each channel sold (from the ledger's orders:
	// "" the fans' orders through the queue, box_office and any other a
	// box-office sale went through; absent without a ledger).
	ByChannel []ChannelSales `json:"by_channel,omitempty"`
}

// ChannelSales is what one channel sold in one currency, as PhaseSales.
type ChannelSales struct {
	Channel  string `json:"channel"`
	Currency string `json:"currency"`
	Orders   int64  `json:"orders"`
	Seats    int64  `json:"seats"`
	Revenue  int64  `json:"revenue"`
}

// PhaseSales is what one phase sold in one currency: orders, seats (less
// those cancelled since) and their revenue in minor units. Phase "" is
// sales made while the event had no phase.
type PhaseSales struct {
	Phase    string `json:"phase"`
	Currency string `json:"currency"`
	Orders   int64  `json:"orders"`
	Seats    int64  `json:"seats"`
	Revenue  int64  `json:"revenue"`
}

// Read returns eventID's report (all zero for a sale with no facts).
func Read(ctx context.Context, rdb redis.Cmdable, prefix, eventID string) (Report, error) {
	k := keys(prefix, eventID, "")
	pipe := rdb.Pipeline()
	counts, queue, purchase, minutes := pipe.HGetAll(ctx, k[0]), pipe.HGetAll(ctx, k[3]), pipe.HGetAll(ctx, k[4]),
		pipe.HGetAll(ctx, k[5])
	if _, err := pipe.Exec(ctx); err != nil {
		return Report{}, fmt.Errorf("read report: %w", err)
	}
	r := Report{EventID: eventID, Counts: map[string]int64{}, Revenue: map[string]int64{}, Refunds: map[string]int64{},
		Conversion: map[string]float64{}, AdmissionsPerMinute: []Minute{}}
	for _, t := range Topics {
		r.Counts[t] = 0
	}
	for f, v := range counts.Val() {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch {
		case strings.HasPrefix(f, "revenue:"):
			r.Revenue[strings.TrimPrefix(f, "revenue:")] = n
		case strings.HasPrefix(f, "refunds:"):
			r.Refunds[strings.TrimPrefix(f, "refunds:")] = n
		default:
			r.Counts[f] = n
		}
	}
	ratio := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return math.Round(float64(a)/float64(b)*10000) / 10000
	}
	c := r.Counts
	r.Conversion["admitted_per_joined"] = ratio(c[events.TopicUserPromoted], c[events.TopicBookingRequest])
	r.Conversion["paying_per_admitted"] = ratio(c[events.TopicPaymentInitiated], c[events.TopicUserPromoted])
	r.Conversion["completed_per_paying"] = ratio(c[events.TopicBookingCompleted], c[events.TopicPaymentInitiated])
	r.Conversion["completed_per_joined"] = ratio(c[events.TopicBookingCompleted], c[events.TopicBookingRequest])
	r.TimeInQueue = distribution(queue.Val())
	r.TimeToPurchase = distribution(purchase.Val())
	for f, v := range minutes.Val() {
		m, err1 := strconv.ParseInt(f, 10, 64)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 == nil && err2 == nil {
			r.AdmissionsPerMinute = append(r.AdmissionsPerMinute, Minute{Minute: time.Unix(m*60, 0).UTC(), Admissions: n})
		}
	}
	sort.Slice(r.AdmissionsPerMinute, func(i, j int) bool {
		return r.AdmissionsPerMinute[i].Minute.Before(r.AdmissionsPerMinute[j].Minute)
	})
	return r, nil
}

// bucketUpper is the upper bound (ms) of bucket b: 2^((b+1)/4) - 1.
func bucketUpper(b int64) int64 {
	return int64(math.Ceil(math.Pow(2, float64(b+1)/4) - 1))
}

func distribution(h map[string]string) Distribution {
	type bc struct{ b, n int64 }
	var bs []bc
	var total int64
	for f, v := range h {
		b, err1 := strconv.ParseInt(f, 10, 64)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 == nil && err2 == nil && n > 0 {
			bs = append(bs, bc{b, n})
			total += n
		}
	}
	if total == 0 {
		return Distribution{}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].b < bs[j].b })
	pct := func(p float64) int64 {
		rank := int64(math.Ceil(p * float64(total)))
		var seen int64
		for _, x := range bs {
			seen += x.n
			if seen >= rank {
				return bucketUpper(x.b)
			}
		}
		return bucketUpper(bs[len(bs)-1].b)
	}
	return Distribution{Count: total, P50MS: pct(0.5), P90MS: pct(0.9), P99MS: pct(0.99)}
}

// CSV is the report as metric,key,value rows (one header row), sorted;
// a phase's rows are keyed <currency>:<phase id>.
func (r Report) CSV() string {
	var rows []string
	add := func(metric, key string, v string) { rows = append(rows, metric+","+key+","+v) }
	for t, n := range r.Counts {
		add("count", t, strconv.FormatInt(n, 10))
	}
	for c, n := range r.Revenue {
		add("revenue", c, strconv.FormatInt(n, 10))
	}
	for c, n := range r.Refunds {
		add("refunds", c, strconv.FormatInt(n, 10))
	}
	for k, v := range r.Conversion {
		add("conversion", k, strconv.FormatFloat(v, 'f', -1, 64))
	}
	for name, d := range map[string]Distribution{"time_in_queue": r.TimeInQueue, "time_to_purchase": r.TimeToPurchase} {
		add(name, "count", strconv.FormatInt(d.Count, 10))
		add(name, "p50_ms", strconv.FormatInt(d.P50MS, 10))
		add(name, "p90_ms", strconv.FormatInt(d.P90MS, 10))
		add(name, "p99_ms", strconv.FormatInt(d.P99MS, 10))
	}
	for _, m := range r.AdmissionsPerMinute {
		add("admissions_per_minute", m.Minute.Format(time.RFC3339), strconv.FormatInt(m.Admissions, 10))
	}
	// the currency (3 letters) first: any phase or channel id after it reads back
	key := func(currency, id string) string {
		key := currency + ":" + id
		if strings.ContainsAny(key, ",\"") {
			key = `"` + strings.ReplaceAll(key, `"`, `""`) + `"`
		}
		return key
	}
	for _, p := range r.ByPhase {
		k := key(p.Currency, p.Phase)
		add("phase_orders", k, strconv.FormatInt(p.Orders, 10))
		add("phase_seats", k, strconv.FormatInt(p.Seats, 10))
		add("phase_revenue", k, strconv.FormatInt(p.Revenue, 10))
	}
	for _, p := range r.ByChannel {
		k := key(p.Currency, p.Channel)
		add("channel_orders", k, strconv.FormatInt(p.Orders, 10))
		add("channel_seats", k, strconv.FormatInt(p.Seats, 10))
		add("channel_revenue", k, strconv.FormatInt(p.Revenue, 10))
	}
	sort.Strings(rows)
	return "metric,key,value\n" + strings.Join(rows, "\n") + "\n"
}

// Config configures the consumer (NewConsumer).
type Config struct {
	Brokers []string      // Kafka bootstrap addresses
	GroupID string        // consumer group; default "report"
	Prefix  string        // Redis key prefix; default DefaultPrefix
	SeenTTL time.Duration // default DefaultSeenTTL
	// Kafka is TLS, SASL and the topic prefix (zero: plaintext, no prefix).
	Kafka events.ClientConfig
}

// Topics are the topics a report counts: every sale fact of
// events.AllTopics, not the operators' actions (operator_action, the
// audit trail's; GET /api/admin/audit?event_id= lists them) and not
// the admission log's copies (admission_logged repeats each admission
// that user_promoted already counts, published seconds later).
var Topics = slices.DeleteFunc(slices.Clone(events.AllTopics), func(t string) bool {
	return t == events.TopicOperatorAction || t == events.TopicAdmissionLogged
})

// NewConsumer returns the report consumer, every topic of Topics
// from the oldest message into the reports, writing to rdb: its Run
// consumes until ctx is cancelled (then nil) or a topic's consumer fails.
// A Redis error is retried; the offset is committed only after the fact
// was counted (or recognised as counted). log may be nil.
func NewConsumer(cfg Config, rdb redis.Cmdable, log *zap.Logger) events.Tally {
	return events.Tally{Brokers: cfg.Brokers, GroupID: cmp.Or(cfg.GroupID, "report"), Topics: Topics,
		Count: NewCounter(rdb, cfg.Prefix, cfg.SeenTTL).Count, Log: log,
		Options: []events.ConsumerOption{events.WithConsumerClient(cfg.Kafka)}}
}
