package amqpx

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/boxoffice/boxoffice/pkg/requestid"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Header names set by this package. They are part of the wire contract of
// retried and dead-lettered messages.
const (
	// HeaderRetryCount is the number of times the message was handed back for
	// retry (0 or absent on the first delivery).
	HeaderRetryCount = "x-retry-count"
	// HeaderLastError is the error text of the last failed handler run.
	HeaderLastError = "x-last-error"
	// HeaderDeadReason says why a message is in a dead-letter queue:
	// DeadReasonPermanent or DeadReasonMaxRetries.
	HeaderDeadReason = "x-dead-reason"
	// HeaderOriginalQueue is the queue a dead-lettered message was consumed from.
	HeaderOriginalQueue = "x-original-queue"
	// HeaderDelay is the x-delayed-message plugin's delay header (milliseconds).
	HeaderDelay = "x-delay"
	// HeaderRequestID carries the request id of the publisher's context
	// (requestid.From) to the consumer's context and logs.
	HeaderRequestID = "x-request-id"
)

// Values of HeaderDeadReason.
const (
	DeadReasonPermanent  = "permanent"
	DeadReasonMaxRetries = "max-retries"
)

// Sentinel errors returned by Publish and PublishDelayed.
var (
	// ErrNacked: the broker refused the message (basic.nack); it was not stored.
	ErrNacked = errors.New("amqpx: message nacked by broker")
	// ErrUnroutable: the message was published mandatory and no queue was
	// bound for its routing key (basic.return); it was dropped by the broker.
	ErrUnroutable = errors.New("amqpx: message unroutable")
	// ErrClosed: the Publisher was closed.
	ErrClosed = errors.New("amqpx: closed")
	// errConnectionLost: the channel closed before the confirm arrived; the
	// message may or may not be stored. Publish retries it on the next
	// connection with the same MessageId.
	errConnectionLost = errors.New("amqpx: connection lost before confirm")
)

// Message is what callers publish. Body is JSON (content type
// application/json). ID becomes the AMQP MessageId; when empty a random one
// is generated. Publishing the same logical event twice must reuse its ID so
// that consumers can deduplicate.
type Message struct {
	ID        string
	Type      string
	Body      []byte
	Headers   amqp.Table
	Timestamp time.Time // defaults to now
}

// Delivery is what a handler receives. It deliberately has no Ack/Nack: the
// Consumer acks, retries or dead-letters based on the handler's result.
type Delivery struct {
	MessageID   string
	Type        string
	Body        []byte
	Headers     amqp.Table
	Timestamp   time.Time
	Exchange    string
	RoutingKey  string
	Redelivered bool // the broker redelivered it (e.g. after a lost connection)
	RetryCount  int  // value of HeaderRetryCount
}

// NewID returns a random message id (26 base32 characters).
func NewID() string { return rand.Text() }

// publishing builds the AMQP message. The request id in ctx (if any) rides
// along in HeaderRequestID, so the consumer's logs name the HTTP request
// that caused the message.
func (m Message) publishing(ctx context.Context) amqp.Publishing {
	id := m.ID
	if id == "" {
		id = NewID()
	}
	ts := m.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	var h amqp.Table
	rid := requestid.From(ctx)
	if len(m.Headers) > 0 || rid != "" {
		h = make(amqp.Table, len(m.Headers)+1)
		for k, v := range m.Headers {
			h[k] = v
		}
		if _, set := h[HeaderRequestID]; !set && rid != "" {
			h[HeaderRequestID] = rid
		}
	}
	return amqp.Publishing{
		Headers:      h,
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		MessageId:    id,
		Timestamp:    ts,
		Type:         m.Type,
		Body:         m.Body,
	}
}

// Permanent marks a handler error as not worth retrying (a malformed or
// poison message): the Consumer dead-letters the message at once. It is
// retry.Permanent, the marker every retry loop of the project shares (a
// Kafka handler returning it dead-letters its message too).
func Permanent(err error) error { return retry.Permanent(err) }

// IsPermanent reports whether err (or an error it wraps) is marked
// permanent (retry.IsPermanent).
func IsPermanent(err error) bool { return retry.IsPermanent(err) }

type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("handler panic: %v", e.v) }

func headerInt(h amqp.Table, key string) int {
	switch v := h[key].(type) {
	case int:
		return v
	case int8:
		return int(v)
	case int16:
		return int(v)
	case int32:
		return int(v)
	case int64:
		return int(v)
	case uint8:
		return int(v)
	case uint16:
		return int(v)
	case uint32:
		return int(v)
	case uint64:
		return int(v)
	}
	return 0
}
