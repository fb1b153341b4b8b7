package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/metadata"

	"github.com/boxoffice/boxoffice/pkg/promx"
	"github.com/boxoffice/boxoffice/pkg/requestid"
)

// Producer publishes events. Publish returns only after every event was
// acknowledged by the broker (or fails); it never drops an event silently.
type Producer interface {
	Publish(ctx context.Context, evs ...Event) error
}

// HeaderRequestID is the Kafka header carrying the id of the request that
// caused an event (when there was one), for tracing across services. It is
// not part of the envelope: the same fact published by a retry with another
// request id is still the same event.
const HeaderRequestID = "request_id"

// NoRequestID as an Event's RequestID publishes it without a request_id
// header, whatever the context carries: for facts no request caused (a
// hold's expiry), where the context's id would name an unrelated request.
const NoRequestID = "-"

// Message turns an event into its Kafka message: topic = type, key =
// event_id, value = the JSON envelope, and the id and type repeated as
// headers so that routers need not parse the value, beside the CloudEvents
// 1.0 Kafka binary-mode headers (cloudEventHeaders). The message's byte
// slices are shared with each other and with other messages: read them,
// never write to them.
func Message(e Event) (kafka.Message, error) { return message(e, "") }

// message is Message with a request_id header when requestID is not "".
func message(e Event, requestID string) (kafka.Message, error) {
	b, at, err := encode(e)
	if err != nil {
		return kafka.Message{}, err
	}
	h, key := cloudEventHeaders(e, at, requestID)
	return kafka.Message{Topic: e.Type, Key: key, Value: b, Headers: h}, nil
}

// KafkaProducer is the Producer on a kafka-go Writer: acks=all, messages
// hashed to partitions by key, synchronous writes batched across concurrent
// callers. Safe for concurrent use.
type KafkaProducer struct {
	w       *kafka.Writer
	metrics *producerMetrics
	source  string // every event's source, when set (WithSource)
	prefix  string // ClientConfig.TopicPrefix
}

type producerConfig struct {
	batchTimeout time.Duration
	batchSize    int
	maxAttempts  int
	writeTimeout time.Duration
	dialTimeout  time.Duration
	clientID     string
	registerer   prometheus.Registerer
	source       string
	client       ClientConfig
}

// ProducerOption configures NewKafkaProducer.
type ProducerOption func(*producerConfig)

// WithBatchTimeout sets how long the writer waits to fill a batch (default
// 2ms). kafka-go's own default of 1s would add a second to every
// synchronous publish.
func WithBatchTimeout(d time.Duration) ProducerOption {
	return func(c *producerConfig) { c.batchTimeout = d }
}

// WithBatchSize sets the most messages per partition batch (default 500:
// the gateway relay's batch of join facts, admission.WithRelayBatch, in
// one produce request).
func WithBatchSize(n int) ProducerOption {
	return func(c *producerConfig) { c.batchSize = n }
}

// WithMaxAttempts sets how many times a batch is tried before Publish fails
// (default 3, with 50ms..500ms backoff).
func WithMaxAttempts(n int) ProducerOption {
	return func(c *producerConfig) { c.maxAttempts = n }
}

// WithWriteTimeout bounds one network write or read of the writer (default
// 5s). The caller's context bounds the whole Publish.
func WithWriteTimeout(d time.Duration) ProducerOption {
	return func(c *producerConfig) { c.writeTimeout = d }
}

// WithClientID sets the Kafka client id (default "boxoffice").
func WithClientID(id string) ProducerOption {
	return func(c *producerConfig) { c.clientID = id }
}

// WithRegisterer registers the producer's metrics (default: not registered).
// Registering twice on one registry reuses the existing collectors.
func WithRegisterer(r prometheus.Registerer) ProducerOption {
	return func(c *producerConfig) { c.registerer = r }
}

// metadataTTL is how often the producer refreshes the cluster's partition
// leaders (a metadata request per producer per period).
const metadataTTL = time.Second

// partitionsTTL is how long topicPartitions answers from its last answer.
const partitionsTTL = 100 * time.Millisecond

// topicPartitions is the writer's Transport with kafka-go's metadata
// request for one topic, which the writer makes for every message (to
// count the topic's partitions), answered from the Transport's last
// answer for that topic for up to partitionsTTL: one request per topic
// and batch instead of one per message, each of which copied the
// Transport's cached metadata (BenchmarkPublishBatch). Answers with an
// error are not kept; every other request goes to the Transport.
type topicPartitions struct {
	kafka.RoundTripper
	mu   sync.Mutex
	last map[string]partitionsAnswer
}

type partitionsAnswer struct {
	res  *metadata.Response
	auto bool // the request's AllowAutoTopicCreation
	at   time.Time
}

func (t *topicPartitions) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	m, ok := req.(*metadata.Request)
	if !ok || len(m.TopicNames) != 1 {
		return t.RoundTripper.RoundTrip(ctx, addr, req)
	}
	topic, now := m.TopicNames[0], time.Now()
	t.mu.Lock()
	a, ok := t.last[topic]
	t.mu.Unlock()
	if ok && a.auto == m.AllowAutoTopicCreation && now.Sub(a.at) < partitionsTTL {
		return a.res, nil
	}
	res, err := t.RoundTripper.RoundTrip(ctx, addr, req)
	if r, ok := res.(*metadata.Response); err == nil && ok && len(r.Topics) == 1 && r.Topics[0].Name == topic &&
		r.Topics[0].ErrorCode == 0 {
		t.mu.Lock()
		if t.last == nil {
			t.last = map[string]partitionsAnswer{}
		}
		t.last[topic] = partitionsAnswer{res: r, auto: m.AllowAutoTopicCreation, at: now}
		t.mu.Unlock()
	}
	return res, err
}

// NewKafkaProducer returns a producer writing to brokers ("host:port"). The
// writer has its own Transport: kafka-go's shared default caches topic
// metadata across writers. No connection is made until the first Publish.
func NewKafkaProducer(brokers []string, opts ...ProducerOption) (*KafkaProducer, error) {
	if len(brokers) == 0 {
		return nil, errors.New("events: no kafka brokers")
	}
	cfg := producerConfig{
		batchTimeout: 2 * time.Millisecond,
		batchSize:    500,
		maxAttempts:  3,
		writeTimeout: 5 * time.Second,
		dialTimeout:  3 * time.Second,
		clientID:     "boxoffice",
	}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := newProducerMetrics(cfg.registerer)
	if err != nil {
		return nil, err
	}
	tlsCfg, mech, err := cfg.client.security()
	if err != nil {
		return nil, err
	}
	codec, err := cfg.client.compression()
	if err != nil {
		return nil, err
	}
	w := &kafka.Writer{
		Addr:            kafka.TCP(brokers...),
		Balancer:        &kafka.Hash{},
		RequiredAcks:    kafka.RequireAll,
		Async:           false,
		BatchTimeout:    cfg.batchTimeout,
		BatchSize:       cfg.batchSize,
		MaxAttempts:     cfg.maxAttempts,
		WriteBackoffMin: 50 * time.Millisecond,
		WriteBackoffMax: 500 * time.Millisecond,
		ReadTimeout:     cfg.writeTimeout,
		WriteTimeout:    cfg.writeTimeout,
		Compression:     codec,
		Transport: &topicPartitions{RoundTripper: &kafka.Transport{
			ClientID:    cfg.clientID,
			DialTimeout: cfg.dialTimeout,
			IdleTimeout: 5 * time.Minute,
			// kafka-go refreshes partition leaders only on this timer
			// (default 6 s), not on NOT_LEADER errors: after a broker
			// loss every publish to its partitions fails until then.
			MetadataTTL: metadataTTL,
			TLS:         tlsCfg,
			SASL:        mech,
		}},
	}
	return &KafkaProducer{w: w, metrics: m, source: cfg.source, prefix: cfg.client.TopicPrefix}, nil
}

// Publish writes evs and waits for acks=all. Invalid events fail the whole
// call before anything is written. On a write error some events of the call
// may have been written: the caller retries the call, and the deterministic
// ids let consumers drop the duplicates.
func (p *KafkaProducer) Publish(ctx context.Context, evs ...Event) error {
	if len(evs) == 0 {
		return nil
	}
	msgs := make([]kafka.Message, len(evs))
	rid := requestid.From(ctx)
	for i, e := range evs {
		if p.source != "" {
			e.Source = p.source
		}
		// the request that caused the event, for tracing (not part of the envelope)
		r := cmp.Or(e.RequestID, rid)
		if r == NoRequestID {
			r = ""
		}
		m, err := message(e, r)
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		m.Topic = p.prefix + m.Topic
		msgs[i] = m
	}
	start := time.Now()
	err := p.w.WriteMessages(ctx, msgs...)
	p.metrics.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) {
			for i, e := range werrs {
				if e != nil {
					p.metrics.errors.WithLabelValues(msgs[i].Topic).Inc()
				} else {
					p.metrics.writes.WithLabelValues(msgs[i].Topic).Inc()
				}
			}
		} else {
			for _, m := range msgs {
				p.metrics.errors.WithLabelValues(m.Topic).Inc()
			}
		}
		return fmt.Errorf("publish %d events: %w", len(msgs), err)
	}
	// one counter lookup per run of a topic (a relay's batch is all
	// booking_request)
	for i := 0; i < len(msgs); {
		j := i + 1
		for j < len(msgs) && msgs[j].Topic == msgs[i].Topic {
			j++
		}
		p.metrics.writes.WithLabelValues(msgs[i].Topic).Add(float64(j - i))
		i = j
	}
	return nil
}

// Close flushes pending batches and closes the writer's connections.
func (p *KafkaProducer) Close() error {
	return p.w.Close()
}

type producerMetrics struct {
	writes   *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration prometheus.Histogram
}

func newProducerMetrics(r prometheus.Registerer) (*producerMetrics, error) {
	f := promx.Shared(r, "events")
	m := &producerMetrics{
		writes: f.CounterVec("published_total", "Events written to Kafka and acknowledged (acks=all), by topic.", "topic"),
		errors: f.CounterVec("publish_errors_total", "Events whose Kafka write failed and was returned to the caller, by topic.", "topic"),
		duration: f.Histogram("publish_seconds", "Duration of Publish calls, including batching and acks.",
			prometheus.ExponentialBuckets(0.0005, 2, 14)),
	}
	return m, f.Err()
}

// Recorder is an in-memory Producer for the tests of packages that publish:
// it validates and keeps every event so the test can assert on them. Set an
// error with FailWith to test the caller's failure path. Safe for concurrent
// use. (Tests of this package use the embedded broker, not the Recorder.)
type Recorder struct {
	mu   sync.Mutex
	evs  []Event
	fail error
}

// Publish records evs, or returns the error set by FailWith, or a
// validation error, recording nothing in either case.
func (r *Recorder) Publish(_ context.Context, evs ...Event) error {
	for _, e := range evs {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.evs = append(r.evs, evs...)
	return nil
}

// FailWith makes every later Publish return err (nil to succeed again).
func (r *Recorder) FailWith(err error) {
	r.mu.Lock()
	r.fail = err
	r.mu.Unlock()
}

// Events returns a copy of every recorded event, in publish order.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

// Topic returns the recorded events of one type, in publish order.
func (r *Recorder) Topic(typ string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Reset forgets every recorded event.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.evs = nil
	r.mu.Unlock()
}

// WithSource sets the source every published event carries (the envelope's
// source and the ce_source header), SourceFor(DEPLOYMENT_ID). Default: the
// event's own, DefaultSource for the constructors of this package.
func WithSource(source string) ProducerOption {
	return func(c *producerConfig) { c.source = source }
}
