package amqpx

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Publisher publishes persistent JSON messages and waits for publisher
// confirms. It owns one long-lived connection with one confirm-mode channel;
// concurrent Publish calls pipeline on it (each waits only for its own
// confirm). It is safe for concurrent use.
//
// When the connection drops, Publisher reconnects with backoff and
// redeclares the topology. Publish calls made meanwhile wait, bounded by
// their context (or WithPublishTimeout). A publish whose confirm was lost
// with the connection is sent again on the new connection with the same
// MessageId: the broker may then hold it twice (at-least-once).
type Publisher struct {
	url string
	o   options
	log *zap.Logger

	mu    sync.Mutex
	sess  *session
	ready chan struct{} // closed while sess != nil

	closing   chan struct{}
	closeOnce sync.Once
	stopped   chan struct{}

	probes     *prober       // nil without WithDelayProbes
	probesDone chan struct{} // closed when probeLoop has ended
}

// NewPublisher connects to url (amqp://user:pass@host:port/vhost, or several
// such URLs separated by commas, one per cluster node: it connects to any
// that answers, and after a lost connection tries the next node first), declares
// the topology and starts the reconnect loop. It retries the first
// connection with backoff until ctx is done.
func NewPublisher(ctx context.Context, url string, opts ...Option) (*Publisher, error) {
	p := &Publisher{
		url:     url,
		o:       newOptions(opts),
		ready:   make(chan struct{}),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	p.log = p.o.logger.With(zap.String("component", "amqp_publisher"))
	s, err := connectWithBackoff(ctx, p.closing, url, "boxoffice-publisher", p.o, p.log)
	if err != nil {
		return nil, err
	}
	p.setSession(s)
	go p.run(s)
	p.probesDone = make(chan struct{})
	if p.o.probeEvery > 0 {
		p.probes = newProber(p.o.probeEvery, p.o.metrics)
		go p.probeLoop()
	} else {
		close(p.probesDone)
	}
	return p, nil
}

// connectWithBackoff dials until it succeeds, ctx is done or stop closes,
// waiting between attempts as retry.Exponential says (reconnectMin
// doubling to reconnectMax).
func connectWithBackoff(ctx context.Context, stop <-chan struct{}, url, name string, o options, log *zap.Logger) (*session, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if stop != nil {
		go func() {
			select {
			case <-stop:
				cancel(ErrClosed)
			case <-ctx.Done():
			}
		}()
	}
	attempt := 0
	var last error
	s, err := backoff.Retry(ctx, func() (*session, error) {
		s, err := dialAny(url, name, o)
		last = err
		return s, err
	}, backoff.WithBackOff(retry.Exponential(o.reconnectMin, o.reconnectMax)), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, d time.Duration) {
			log.Warn("amqp connect failed", zap.Error(err), zap.Int("attempt", attempt), zap.Duration("retry_in", d))
			attempt++
		}))
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, ErrClosed):
		return nil, ErrClosed
	}
	return nil, fmt.Errorf("amqp connect: %w (last error: %w)", ctx.Err(), last)
}

func (p *Publisher) run(s *session) {
	defer close(p.stopped)
	for {
		select {
		case <-s.done:
		case <-p.closing:
			p.clearSession(s)
			s.close()
			return
		}
		p.clearSession(s)
		p.log.Warn("amqp publisher connection lost; reconnecting")
		ns, err := connectWithBackoff(context.Background(), p.closing, p.url, "boxoffice-publisher", p.o, p.log)
		if err != nil {
			return // closing
		}
		p.o.metrics.Reconnects.WithLabelValues("publisher").Inc()
		p.log.Info("amqp publisher reconnected")
		p.setSession(ns)
		s = ns
	}
}

func (p *Publisher) setSession(s *session) {
	p.mu.Lock()
	p.sess = s
	close(p.ready)
	p.mu.Unlock()
}

func (p *Publisher) clearSession(s *session) {
	p.mu.Lock()
	if p.sess == s {
		p.sess = nil
		p.ready = make(chan struct{})
	}
	p.mu.Unlock()
}

// current returns a live session, waiting for a reconnect if needed.
func (p *Publisher) current(ctx context.Context) (*session, error) {
	for {
		p.mu.Lock()
		s, ready := p.sess, p.ready
		p.mu.Unlock()
		if s != nil && !s.dead() {
			return s, nil
		}
		if s != nil {
			// Dead but not yet cleared by run: wait for the swap.
			p.clearSession(s)
			continue
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for amqp connection: %w", ctx.Err())
		case <-p.closing:
			return nil, ErrClosed
		}
	}
}

// Publish sends msg to exchange with routing key and returns after the
// broker confirmed it. The message is persistent, application/json, with a
// MessageId (msg.ID or a new one) and a timestamp. It is published
// mandatory: if no queue is bound for key the result is ErrUnroutable. A
// nack (the broker did not store it) is sent again with backoff until ctx
// ends, then ErrNacked; a timeout or a closed Publisher is an error too. A nil
// error means the broker has stored the message.
func (p *Publisher) Publish(ctx context.Context, exchange, key string, msg Message) error {
	pub := msg.publishing(ctx)
	return p.do(ctx, exchange, func(ctx context.Context, s *session) error {
		return s.pub.publish(ctx, exchange, key, true, pub)
	})
}

// PublishDelayed is Publish, delivered to exchange/key no earlier than delay
// from now.
//
// Stock RabbitMQ (default): the delay is rounded UP by RoundDelay and the
// message goes through the default exchange into the wait queue
// WaitQueueName(exchange, key, delay) — durable, x-message-ttl = delay,
// dead-lettering to exchange with routing key key, x-expires = delay + 1 h —
// declared on first use. Every message in one wait queue has the same TTL,
// so expiry order is arrival order and nothing waits behind a longer delay.
// The hand-over from the wait queue to exchange is at-most-once (see
// Topology.waitQueueArgs for why not at-least-once): a delayed message
// expiring while its target queue has no reachable leader is lost, as a
// message in a classic wait queue is when its node fails. Use it for
// messages whose loss a periodic safety net covers, as boxoffice's
// timeouts are (expiry scores in Redis).
//
// With WithDelayedMessagePlugin and exchange == TimeoutExchange, the message
// is published to the x-delayed-message exchange with the x-delay header
// (milliseconds, not rounded). The plugin routes only when the delay ends,
// so the publish cannot be mandatory: an unroutable key is not reported.
func (p *Publisher) PublishDelayed(ctx context.Context, exchange, key string, msg Message, delay time.Duration) error {
	if delay <= 0 {
		return p.Publish(ctx, exchange, key, msg)
	}
	pub := msg.publishing(ctx)
	if p.o.delayedPlugin && exchange == TimeoutExchange {
		if pub.Headers == nil {
			pub.Headers = amqp.Table{}
		}
		pub.Headers[HeaderDelay] = delay.Milliseconds()
		return p.do(ctx, exchange, func(ctx context.Context, s *session) error {
			return s.pub.publish(ctx, exchange, key, false, pub)
		})
	}
	err := p.do(ctx, exchange, func(ctx context.Context, s *session) error {
		return s.publishDelayedTTL(ctx, exchange, key, pub, delay)
	})
	if err == nil {
		p.usedWaitQueue(exchange, key, delay)
	}
	return err
}

// usedWaitQueue tells the delay probes (WithDelayProbes) that a message
// went into the wait queue of (exchange, key, delay).
func (p *Publisher) usedWaitQueue(exchange, key string, delay time.Duration) {
	if p.probes == nil {
		return
	}
	d := RoundDelay(delay)
	p.probes.used(WaitQueueName(exchange, key, d), d, exchange, key, time.Now())
}

// Outgoing is one message of a PublishBatch: published to Exchange with
// routing key Key as Publish does, or, when Delay > 0, as PublishDelayed
// does.
type Outgoing struct {
	Exchange, Key string
	Msg           Message
	Delay         time.Duration
}

// PublishBatch publishes every message of out and returns one error per
// message, nil when the broker stored it: each message follows the rules
// of Publish (or PublishDelayed), persistent, confirmed, mandatory.
//
// The messages are sent back to back on the confirm channel and their
// confirms awaited together, so a batch costs about one round trip to the
// broker, which also writes them to disk together, instead of one per
// message (or per window of messages in flight). A message whose first
// attempt did not succeed, for any reason but an answer about the message
// itself (unroutable), is published again on its own by Publish or
// PublishDelayed, with their retries; so a nack or a lost connection in
// the middle of a batch is handled as for a single message.
func (p *Publisher) PublishBatch(ctx context.Context, out []Outgoing) []error {
	errs := make([]error, len(out))
	if len(out) == 0 {
		return errs
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.o.publishTimeout)
		defer cancel()
	}
	pending := make([]*pendingPublish, len(out))
	s, err := p.current(ctx)
	if err == nil {
		for i, o := range out {
			pending[i], errs[i] = p.send(ctx, s, o)
		}
		for i, pp := range pending {
			if pp != nil {
				errs[i] = pp.wait(ctx)
			}
		}
	}
	for i, o := range out {
		switch {
		case err != nil:
			errs[i] = err
			p.failed(o.Exchange, err)
		case errs[i] == nil:
			p.o.metrics.PublishConfirmed.WithLabelValues(o.Exchange).Inc()
			if o.Delay > 0 && !(p.o.delayedPlugin && o.Exchange == TimeoutExchange) {
				p.usedWaitQueue(o.Exchange, o.Key, o.Delay)
			}
		case errors.Is(errs[i], ErrUnroutable) && o.Delay <= 0:
			p.failed(o.Exchange, errs[i]) // the answer Publish would give
		default:
			// nacked, connection lost, a vanished wait queue: one by one
			if o.Delay > 0 {
				errs[i] = p.PublishDelayed(ctx, o.Exchange, o.Key, o.Msg, o.Delay)
			} else {
				errs[i] = p.Publish(ctx, o.Exchange, o.Key, o.Msg)
			}
		}
	}
	return errs
}

// send sends one message of a batch on s without waiting for its confirm,
// the way Publish or PublishDelayed would.
func (p *Publisher) send(ctx context.Context, s *session, o Outgoing) (*pendingPublish, error) {
	pub := o.Msg.publishing(ctx)
	if o.Delay <= 0 {
		return s.pub.send(ctx, o.Exchange, o.Key, true, pub)
	}
	if p.o.delayedPlugin && o.Exchange == TimeoutExchange {
		pub.Headers = maps.Clone(pub.Headers)
		if pub.Headers == nil {
			pub.Headers = amqp.Table{}
		}
		pub.Headers[HeaderDelay] = o.Delay.Milliseconds()
		return s.pub.send(ctx, o.Exchange, o.Key, false, pub)
	}
	d := RoundDelay(o.Delay)
	name := WaitQueueName(o.Exchange, o.Key, d)
	if err := s.ensureWaitQueue(name, d, o.Exchange, o.Key); err != nil {
		return nil, err
	}
	return s.pub.send(ctx, "", name, true, pub)
}

// do runs one publish attempt per live session until it gets an answer that
// is not "connection lost" or a nack, or ctx ends. A nacked message was not
// stored, so it is sent again (backoff 100 ms doubling to 2 s) until ctx
// ends, from the second nack on over a new connection: after a RabbitMQ
// node was lost, a channel that had published to a quorum queue led from
// that node kept being nacked on 3.10.8 although the new leader was elected
// within milliseconds (pkg/amqpx/cluster_test.go). No boxoffice queue has a
// length limit, so a nack is never permanent.
func (p *Publisher) do(ctx context.Context, exchange string, attempt func(context.Context, *session) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.o.publishTimeout)
		defer cancel()
	}
	nackBackoff := retry.Exponential(100*time.Millisecond, 2*time.Second)
	for nacks := 0; ; {
		s, err := p.current(ctx)
		if err != nil {
			p.failed(exchange, err)
			return err
		}
		err = attempt(ctx, s)
		if err == nil {
			p.o.metrics.PublishConfirmed.WithLabelValues(exchange).Inc()
			return nil
		}
		if errors.Is(err, ErrNacked) {
			// Not stored: safe to send again with the same MessageId.
			// From the second nack on, on a new connection: a channel
			// that published to a quorum queue before its leader was
			// lost can keep being nacked (seen on 3.10.8 for a minute).
			if nacks > 0 {
				p.log.Warn("amqp publish nacked again; reconnecting", zap.Int("nacks", nacks+1))
				go s.close() // run reconnects; current waits for it
			}
			t := time.NewTimer(nackBackoff.NextBackOff())
			nacks++
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
			}
		}
		if isConnectionLoss(err) {
			// Unknown outcome: wait for the session to be replaced and
			// publish again with the same MessageId.
			select {
			case <-s.done:
				continue
			case <-ctx.Done():
				err = fmt.Errorf("publish: %w", ctx.Err())
			}
		}
		p.failed(exchange, err)
		return err
	}
}

func (p *Publisher) failed(exchange string, err error) {
	reason := "error"
	switch {
	case errors.Is(err, ErrNacked):
		reason = "nack"
	case errors.Is(err, ErrUnroutable):
		reason = "unroutable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		reason = "timeout"
	case errors.Is(err, ErrClosed):
		reason = "closed"
	}
	p.o.metrics.PublishFailed.WithLabelValues(exchange, reason).Inc()
	p.log.Warn("amqp publish failed", zap.String("exchange", exchange), zap.String("reason", reason), zap.Error(err))
}

// Close stops reconnecting and closes the connection. Publishes waiting for
// a confirm fail; later calls return ErrClosed.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() { close(p.closing) })
	<-p.probesDone
	<-p.stopped
	return nil
}

// isConnectionLoss reports whether err means "the connection or channel went
// away", as opposed to an answer from the broker about this message.
func isConnectionLoss(err error) bool {
	if errors.Is(err, errConnectionLost) || errors.Is(err, amqp.ErrClosed) {
		return true
	}
	var ae *amqp.Error
	return errors.As(err, &ae) && !ae.Recover
}
