// Package retry is boxoffice's one retry policy, on
// github.com/cenkalti/backoff/v5: a delay starts at a minimum and doubles
// up to a maximum, with [Jitter] so that many instances do not retry
// in step, and an error marked [Permanent] is never retried. amqpx
// (reconnects, nacked publishes, the delays of its retry wait queues), the
// Kafka consumer of package events (fetches, handler retries) and the
// payment sandbox (webhook deliveries) all retry this way; run a retry
// loop with backoff.Retry and [Exponential].
package retry

import (
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Jitter is how far each delay of [Exponential] is spread either side of
// its nominal value, as a fraction of it.
const Jitter = 0.2

// Exponential returns the policy from minDelay doubling to maxDelay, with
// [Jitter]. A backoff.ExponentialBackOff is not safe for concurrent use:
// make one per retry loop.
func Exponential(minDelay, maxDelay time.Duration) *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{
		InitialInterval:     min(minDelay, maxDelay),
		RandomizationFactor: Jitter,
		Multiplier:          2,
		MaxInterval:         maxDelay,
	}
}

// Delay is the nominal delay before retry n (0-based) of [Exponential],
// without jitter: minDelay·2ⁿ capped at maxDelay. It is for schedules that
// must be the same every time: amqpx names each retry wait queue after its
// delay.
func Delay(n int, minDelay, maxDelay time.Duration) time.Duration {
	b := Exponential(minDelay, maxDelay)
	b.RandomizationFactor = 0
	d := b.NextBackOff()
	for range n {
		d = b.NextBackOff()
	}
	return d
}

// Permanent marks err as not worth retrying (a malformed message, a
// request that can never succeed): backoff.Retry stops at it, amqpx
// dead-letters the message at once and the Kafka consumer hands it to its
// dead-letter function. It is backoff's own marker (*backoff.PermanentError),
// so every retry loop of the project agrees on it; the error text starts
// with "permanent: ". Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return backoff.Permanent(fmt.Errorf("permanent: %w", err))
}

// IsPermanent reports whether err, or an error it wraps, is marked
// permanent (by [Permanent] or backoff.Permanent).
func IsPermanent(err error) bool {
	var p *backoff.PermanentError
	return errors.As(err, &p)
}
