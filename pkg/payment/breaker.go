package payment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sony/gobreaker/v2"
)

// ErrOpen is returned (wrapping ErrProvider) without calling the provider
// while the breaker is open: the provider failed too often lately.
var ErrOpen = fmt.Errorf("%w: circuit open", ErrProvider)

// BreakerSettings configures a Breaker; zero fields take the defaults.
type BreakerSettings struct {
	// Failures in a row that open the breaker (default 5).
	Failures uint32
	// Open is how long it stays open before letting probes through
	// (default 30 s).
	Open time.Duration
	// Probes is how many calls in a row must succeed, half-open, to close
	// it again (default 3).
	Probes uint32
	// OnChange, when set, is told every change of state: open (the
	// provider is failing) and closed again (it answers).
	OnChange func(open bool)
}

// Breaker calls a provider (creating payments and refunds) through a
// circuit breaker (github.com/sony/gobreaker/v2): after Failures failures
// in a row every call fails fast with ErrOpen for Open, then up to Probes
// calls go through; if they all succeed it closes, else it opens again.
// A failure is an error wrapping ErrProvider or a timeout; a call the
// caller cancelled counts for nothing.
type Breaker struct {
	provider Provider
	refunder Refunder
	cb       *gobreaker.CircuitBreaker[any]
}

// NewBreaker returns p and r (either may be nil) behind one breaker: they
// are one provider.
func NewBreaker(p Provider, r Refunder, s BreakerSettings) *Breaker {
	if s.Failures == 0 {
		s.Failures = 5
	}
	if s.Open <= 0 {
		s.Open = 30 * time.Second
	}
	if s.Probes == 0 {
		s.Probes = 3
	}
	st := gobreaker.Settings{
		Name:        "payment-provider",
		MaxRequests: s.Probes,
		Timeout:     s.Open,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= s.Failures },
		IsExcluded:  func(err error) bool { return errors.Is(err, context.Canceled) },
		IsSuccessful: func(err error) bool {
			return err == nil || !(errors.Is(err, ErrProvider) || errors.Is(err, context.DeadlineExceeded))
		},
	}
	if s.OnChange != nil {
		st.OnStateChange = func(_ string, from, to gobreaker.State) {
			switch {
			case to == gobreaker.StateOpen && from == gobreaker.StateClosed:
				s.OnChange(true)
			case to == gobreaker.StateClosed:
				s.OnChange(false)
			}
		}
	}
	return &Breaker{provider: p, refunder: r, cb: gobreaker.NewCircuitBreaker[any](st)}
}

// Open reports whether calls fail fast now.
func (b *Breaker) Open() bool { return b.cb.State() == gobreaker.StateOpen }

func (b *Breaker) call(fn func() (any, error)) (any, error) {
	v, err := b.cb.Execute(fn)
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return nil, ErrOpen
	}
	return v, err
}

// Create creates a payment through the breaker.
func (b *Breaker) Create(ctx context.Context, r Request) (Payment, error) {
	v, err := b.call(func() (any, error) { return b.provider.Create(ctx, r) })
	if err != nil {
		return Payment{}, err
	}
	return v.(Payment), nil
}

// Refund refunds a payment through the breaker.
func (b *Breaker) Refund(ctx context.Context, paymentID string, amount int64, key string) (Refund, error) {
	v, err := b.call(func() (any, error) { return b.refunder.Refund(ctx, paymentID, amount, key) })
	if err != nil {
		return Refund{}, err
	}
	return v.(Refund), nil
}

// Probe, unless the breaker is closed, calls ask through it as one of its
// probes: ask is a call that changes nothing at the provider (a payment's
// status), and an answer, a refusal included, counts as a success. So the
// breaker closes after an outage without waiting for a fan to pay. While
// it is closed nothing is called; while open ErrOpen is returned.
func (b *Breaker) Probe(ctx context.Context, ask func(context.Context) error) error {
	if b.cb.State() == gobreaker.StateClosed {
		return nil
	}
	_, err := b.call(func() (any, error) {
		err := ask(ctx)
		if pe := (*Error)(nil); errors.As(err, &pe) && pe.Refused() {
			return nil, nil
		}
		return nil, err
	})
	return err
}
