package amqpx

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap"
)

// ProbeType is the AMQP type of a delay probe. A Consumer never hands a
// probe to its handler: it sends it back to the probe's reply_to queue and
// acks it. Deploy consumers that know probes before publishers that send
// them (an older consumer takes a probe for a malformed message).
const ProbeType = "amqpx.delay-probe"

// Headers of a delay probe: the wait queue it went through and when it was
// due out of it (unix milliseconds, the publisher's clock).
const (
	headerProbeQueue = "x-probe-wait-queue"
	headerProbeDue   = "x-probe-due-ms"
)

// prober is the Publisher's side of the delay probes (WithDelayProbes):
// which wait queues it used, which probes it sent through each and which
// came back.
//
// A wait queue whose messages neither expire nor move (a broker that stopped
// dead-lettering out of it, a queue without a leader, a target queue
// without a consumer) sends back nothing, so the probes sent through it
// pile up unanswered and the oldest of them grows overdue. Only probes
// newer than the newest one that came back count: one probe lost on its
// own (at-most-once out of the wait queue) is passed by the next.
type prober struct {
	every time.Duration
	m     *Metrics

	mu     sync.Mutex
	queues map[string]*probedQueue
	// replyQueue is the exclusive queue probes come back to, declared on
	// the session replyFor (the queue goes with its connection).
	replyFor   *session
	replyQueue string
}

type probedQueue struct {
	ttl           time.Duration
	exchange, key string
	lastUsed      time.Time
	pending       []time.Time // due times of probes sent and not back, ascending
	newestBack    time.Time   // due time of the newest probe that came back
}

func newProber(every time.Duration, m *Metrics) *prober {
	return &prober{every: every, m: m, queues: make(map[string]*probedQueue)}
}

// used records a message published into wait queue name.
func (pr *prober) used(name string, ttl time.Duration, exchange, key string, now time.Time) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	q := pr.queues[name]
	if q == nil {
		q = &probedQueue{ttl: ttl, exchange: exchange, key: key}
		pr.queues[name] = q
		pr.m.DelayOverdue.WithLabelValues(name).Set(0)
	}
	q.lastUsed = now
}

// toProbe returns the wait queues to send a probe through now: those that
// may still hold a message published into them (used within their TTL and
// one probe interval), and those with a probe more than an interval
// overdue, which keep being probed until one comes back (so that a lost
// last probe does not leave the queue overdue for good).
func (pr *prober) toProbe(now time.Time) map[string]probedQueue {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	out := map[string]probedQueue{}
	for name, q := range pr.queues {
		if now.Before(q.lastUsed.Add(q.ttl+pr.every)) || (len(q.pending) > 0 && q.pending[0].Add(pr.every).Before(now)) {
			out[name] = *q
		}
	}
	return out
}

// sent records a probe sent through name, due at due.
func (pr *prober) sent(name string, due time.Time) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if q := pr.queues[name]; q != nil {
		q.pending = append(q.pending, due)
	}
}

// back records a probe that came back at now.
func (pr *prober) back(name string, due, now time.Time) {
	pr.mu.Lock()
	q := pr.queues[name]
	if q != nil && due.After(q.newestBack) {
		q.newestBack = due
	}
	pr.mu.Unlock()
	if q != nil {
		pr.m.DelayProbeLateness.WithLabelValues(name).Observe(now.Sub(due).Seconds())
	}
}

// update drops the probes passed by a newer one that came back, sets each
// wait queue's overdue gauge, and forgets the queues no longer in use
// with nothing outstanding.
func (pr *prober) update(now time.Time) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for name, q := range pr.queues {
		i := sort.Search(len(q.pending), func(i int) bool { return q.pending[i].After(q.newestBack) })
		q.pending = q.pending[i:]
		overdue := time.Duration(0)
		if len(q.pending) > 0 && q.pending[0].Before(now) {
			overdue = now.Sub(q.pending[0])
		}
		if len(q.pending) == 0 && !now.Before(q.lastUsed.Add(q.ttl+pr.every)) {
			delete(pr.queues, name)
			pr.m.DelayOverdue.DeleteLabelValues(name)
			continue
		}
		pr.m.DelayOverdue.WithLabelValues(name).Set(overdue.Seconds())
	}
}

// probeLoop sends a probe through every wait queue in use each interval
// and keeps the overdue gauges current, until the Publisher closes.
func (p *Publisher) probeLoop() {
	defer close(p.probesDone)
	t := time.NewTicker(p.probes.every)
	defer t.Stop()
	for {
		select {
		case <-p.closing:
			return
		case <-t.C:
		}
		p.probeOnce(time.Now())
	}
}

// probeOnce sends this round's probes over the current session (none while
// reconnecting: the probes already out then grow overdue, as they should
// if the wait queues stopped) and updates the gauges.
func (p *Publisher) probeOnce(now time.Time) {
	pr := p.probes
	p.mu.Lock()
	s := p.sess
	p.mu.Unlock()
	queues := pr.toProbe(now)
	if s != nil && !s.dead() && len(queues) > 0 {
		if reply, err := p.probeReplyQueue(s); err != nil {
			p.log.Warn("amqp delay probe: reply queue", zap.Error(err))
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), pr.every)
			for name, q := range queues {
				// in milliseconds, as the probe carries it back
				due := time.UnixMilli(time.Now().Add(q.ttl).UnixMilli())
				if err := p.sendProbe(ctx, s, name, q, reply, due); err != nil {
					p.log.Warn("amqp delay probe not sent", zap.String("wait_queue", name), zap.Error(err))
					continue
				}
				pr.sent(name, due)
			}
			cancel()
		}
	}
	pr.update(time.Now())
}

// sendProbe publishes one probe into wait queue name, confirmed, mandatory
// (a vanished wait queue is declared again first, as PublishDelayed does).
func (p *Publisher) sendProbe(ctx context.Context, s *session, name string, q probedQueue, reply string, due time.Time) error {
	if err := s.ensureWaitQueue(name, q.ttl, q.exchange, q.key); err != nil {
		return err
	}
	err := s.pub.publish(ctx, "", name, true, amqp.Publishing{
		Type:      ProbeType,
		MessageId: "probe-" + NewID(),
		Timestamp: time.Now(),
		ReplyTo:   reply,
		Headers:   amqp.Table{headerProbeQueue: name, headerProbeDue: due.UnixMilli()},
	})
	if err != nil {
		s.forgetWaitQueue(name)
	}
	return err
}

// probeReplyQueue returns the session's reply queue for probes, declaring
// it and starting to consume it on first use: exclusive, auto-delete,
// server-named, gone with the connection (probes still out then come back
// to nothing and are passed by later ones).
func (p *Publisher) probeReplyQueue(s *session) (string, error) {
	pr := p.probes
	pr.mu.Lock()
	if pr.replyFor == s {
		defer pr.mu.Unlock()
		return pr.replyQueue, nil
	}
	pr.mu.Unlock()
	ch, err := s.conn.Channel()
	if err != nil {
		return "", fmt.Errorf("open channel: %w", err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		_ = ch.Close()
		return "", fmt.Errorf("declare reply queue: %w", err)
	}
	back, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		_ = ch.Close()
		return "", fmt.Errorf("consume reply queue: %w", err)
	}
	go func() {
		for d := range back {
			name, _ := d.Headers[headerProbeQueue].(string)
			due := headerInt(d.Headers, headerProbeDue)
			if name != "" && due > 0 {
				pr.back(name, time.UnixMilli(int64(due)), time.Now())
			}
		}
	}()
	pr.mu.Lock()
	pr.replyFor, pr.replyQueue = s, q.Name
	pr.mu.Unlock()
	return q.Name, nil
}

// bounceProbe sends a probe that reached a consumed queue back to its
// reply_to queue (not mandatory, not retried: a probe lost here is passed
// by the next one) and acks it.
func (c *Consumer) bounceProbe(ctx context.Context, s *session, d amqp.Delivery, log *zap.Logger) {
	if d.ReplyTo != "" {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := s.pub.publish(pctx, "", d.ReplyTo, false, amqp.Publishing{
			Type:      ProbeType,
			MessageId: d.MessageId,
			Timestamp: time.Now(),
			Headers:   amqp.Table{headerProbeQueue: d.Headers[headerProbeQueue], headerProbeDue: d.Headers[headerProbeDue]},
		})
		cancel()
		if err != nil {
			log.Debug("amqp delay probe not sent back", zap.Error(err))
		}
	}
	if err := d.Ack(false); err != nil {
		log.Debug("amqp delay probe ack failed", zap.Error(err))
	}
}
