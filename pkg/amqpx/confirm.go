package amqpx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// confirmChannel is an AMQP channel in confirm mode that many goroutines
// publish on concurrently; each publish waits for its own confirm, so
// publishes pipeline instead of serialising on a round trip.
//
// Matching basic.return to the publish: RabbitMQ sends basic.return before
// the basic.ack of the same unroutable mandatory message, and amqp091-go
// dispatches both from one reader goroutine, blocking on each listener
// channel. Both listener channels are unbuffered and drained by the single
// listen goroutine, so the return is recorded before the ack can be
// received: no race between "acked" and "returned".
type confirmChannel struct {
	ch *amqp.Channel

	pubMu sync.Mutex // makes (next sequence number, send) atomic

	mu       sync.Mutex
	pending  map[uint64]*pendingPublish
	closed   bool
	closeErr error
	done     chan struct{} // closed when the channel is gone
}

type pendingPublish struct {
	id       string
	exchange string
	done     chan struct{}
	err      error
}

func newConfirmChannel(conn *amqp.Connection) (*confirmChannel, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("confirm mode: %w", err)
	}
	c := &confirmChannel{
		ch:      ch,
		pending: make(map[uint64]*pendingPublish),
		done:    make(chan struct{}),
	}
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation))
	returns := ch.NotifyReturn(make(chan amqp.Return))
	go c.listen(confirms, returns, closes)
	return c, nil
}

func (c *confirmChannel) listen(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return, closes <-chan *amqp.Error) {
	returned := make(map[string]amqp.Return)
	for confirms != nil || returns != nil {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			returned[r.MessageId] = r
		case cf, ok := <-confirms:
			if !ok {
				confirms = nil
				continue
			}
			c.mu.Lock()
			p := c.pending[cf.DeliveryTag]
			delete(c.pending, cf.DeliveryTag)
			c.mu.Unlock()
			if p == nil {
				continue
			}
			r, wasReturned := returned[p.id]
			delete(returned, p.id)
			switch {
			case !cf.Ack:
				p.err = ErrNacked
			case wasReturned:
				p.err = fmt.Errorf("%w: %d %s (exchange %q, key %q)", ErrUnroutable, r.ReplyCode, r.ReplyText, r.Exchange, r.RoutingKey)
			}
			close(p.done)
		}
	}
	// A soft (channel-level) error caused by a publish, e.g. 404 NOT_FOUND
	// "no exchange 'x' in vhost 'v'", is the error of the publishes to that
	// exchange, not a reason to retry them. Every other pending publish has
	// an unknown outcome: errConnectionLost, so that it is sent again.
	var soft *amqp.Error
	if e, ok := <-closes; ok && e != nil && e.Recover {
		soft = e
	}
	c.mu.Lock()
	c.closed = true
	c.closeErr = errConnectionLost
	for tag, p := range c.pending {
		p.err = errConnectionLost
		if soft != nil && strings.Contains(soft.Reason, "'"+p.exchange+"'") {
			p.err = soft
		}
		close(p.done)
		delete(c.pending, tag)
	}
	c.mu.Unlock()
	close(c.done)
}

// publish sends pub and waits for its confirm. It returns nil only on ack
// without return; errConnectionLost (or the channel's close error) when the
// channel died before the confirm, in which case the broker may or may not
// have stored the message.
func (c *confirmChannel) publish(ctx context.Context, exchange, key string, mandatory bool, pub amqp.Publishing) error {
	p, err := c.send(ctx, exchange, key, mandatory, pub)
	if err != nil {
		return err
	}
	return p.wait(ctx)
}

// send sends pub without waiting: wait on the result for its confirm, so
// that a batch is sent back to back and its confirms awaited together.
func (c *confirmChannel) send(ctx context.Context, exchange, key string, mandatory bool, pub amqp.Publishing) (*pendingPublish, error) {
	p := &pendingPublish{id: pub.MessageId, exchange: exchange, done: make(chan struct{})}
	c.pubMu.Lock()
	tag := c.ch.GetNextPublishSeqNo()
	c.mu.Lock()
	if c.closed {
		err := c.closeErr
		c.mu.Unlock()
		c.pubMu.Unlock()
		return nil, err
	}
	c.pending[tag] = p
	c.mu.Unlock()
	err := c.ch.PublishWithContext(ctx, exchange, key, mandatory, false, pub)
	c.pubMu.Unlock()
	if err != nil {
		c.mu.Lock()
		if c.pending[tag] == p {
			delete(c.pending, tag)
		}
		c.mu.Unlock()
		if errors.Is(err, amqp.ErrClosed) {
			return nil, errConnectionLost
		}
		return nil, err
	}
	return p, nil
}

// wait returns the outcome of a sent publish (see publish), or ctx's error.
func (p *pendingPublish) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		// The pending entry stays; the listener drops it when the confirm
		// arrives or the channel closes.
		return ctx.Err()
	}
}
