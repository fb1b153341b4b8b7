package amqpx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// session is one broker connection with a confirm-mode publishing channel
// and the cache of wait queues declared on it. It is never repaired: when
// the connection or the publishing channel dies, done closes and the owner
// dials a new session.
type session struct {
	conn *amqp.Connection
	pub  *confirmChannel
	done chan struct{}

	topo Topology

	wqMu       sync.Mutex
	waitQueues map[string]time.Time // name -> last declared
}

func dialSession(url, name string, o options) (*session, error) {
	conn, err := amqp.DialConfig(url, amqp.Config{
		Heartbeat:  10 * time.Second,
		Dial:       amqp.DefaultDial(5 * time.Second),
		Properties: amqp.Table{"connection_name": name},
	})
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("open channel: %w", err)
	}
	if err := DeclareTopology(ch, o.topology()); err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = ch.Close()
	pub, err := newConfirmChannel(conn)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	s := &session{conn: conn, pub: pub, done: make(chan struct{}), waitQueues: make(map[string]time.Time), topo: o.topology()}
	go func() {
		select {
		case <-connClosed:
		case <-pub.done:
		}
		_ = conn.Close()
		close(s.done)
	}()
	return s, nil
}

func (s *session) close() {
	_ = s.conn.Close()
	<-s.done
}

func (s *session) dead() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// ensureWaitQueue declares a wait queue unless this session declared it less
// than waitQueueRedeclare ago. Declares use a throwaway channel: a conflicting
// declare closes its channel, which must not be the publishing channel.
func (s *session) ensureWaitQueue(name string, ttl time.Duration, dlx, dlKey string) error {
	s.wqMu.Lock()
	defer s.wqMu.Unlock()
	if t, ok := s.waitQueues[name]; ok && time.Since(t) < waitQueueRedeclare {
		return nil
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if err := declareWaitQueue(ch, s.topo, name, ttl, dlx, dlKey); err != nil {
		return err
	}
	s.waitQueues[name] = time.Now()
	return nil
}

func (s *session) forgetWaitQueue(name string) {
	s.wqMu.Lock()
	delete(s.waitQueues, name)
	s.wqMu.Unlock()
}

// publishDelayedTTL publishes pub into the wait queue for (exchange, key,
// delay) through the default exchange. An unroutable result means the wait
// queue vanished under us (x-expires, manual delete): redeclare and try once
// more.
func (s *session) publishDelayedTTL(ctx context.Context, exchange, key string, pub amqp.Publishing, delay time.Duration) error {
	d := RoundDelay(delay)
	name := WaitQueueName(exchange, key, d)
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if err = s.ensureWaitQueue(name, d, exchange, key); err != nil {
			return err
		}
		err = s.pub.publish(ctx, "", name, true, pub)
		if !errors.Is(err, ErrUnroutable) {
			return err
		}
		s.forgetWaitQueue(name)
	}
	return err
}
