package payment

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type flaky struct {
	mu    sync.Mutex
	fail  bool
	calls int
}

func (f *flaky) Create(context.Context, Request) (Payment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail {
		return Payment{}, ErrProvider
	}
	return Payment{PaymentID: "p", URL: "u"}, nil
}

func (f *flaky) Refund(context.Context, string, int64, string) (Refund, error) {
	_, err := f.Create(context.Background(), Request{})
	return Refund{Status: "refunded"}, err
}

// TestBreaker: failures in a row open it (calls fail fast, the provider is
// not called), after the open time probes go through, and their success
// closes it; OnChange hears both.
func TestBreaker(t *testing.T) {
	ctx := context.Background()
	f := &flaky{fail: true}
	var changes []bool
	b := NewBreaker(f, f, BreakerSettings{Failures: 3, Open: 50 * time.Millisecond, Probes: 2,
		OnChange: func(open bool) { changes = append(changes, open) }})
	for range 3 {
		if _, err := b.Create(ctx, Request{}); !errors.Is(err, ErrProvider) || errors.Is(err, ErrOpen) {
			t.Fatalf("a failing call: %v", err)
		}
	}
	if !b.Open() || len(changes) != 1 || !changes[0] {
		t.Fatalf("open after 3 failures: %v %v", b.Open(), changes)
	}
	if _, err := b.Refund(ctx, "p", 1, ""); !errors.Is(err, ErrOpen) || f.calls != 3 {
		t.Fatalf("while open: %v, %d calls", err, f.calls)
	}
	// a cancelled call is no failure
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = b.Create(cctx, Request{})

	time.Sleep(60 * time.Millisecond)
	f.mu.Lock()
	f.fail = false
	f.mu.Unlock()
	for range 2 {
		if _, err := b.Create(ctx, Request{}); err != nil {
			t.Fatalf("probe: %v", err)
		}
	}
	if b.Open() || len(changes) != 2 || changes[1] {
		t.Fatalf("closed after 2 probes: %v %v", b.Open(), changes)
	}
}

// TestBreakerProbe: probes go through only while the breaker is not
// closed; an answer, a refusal included, closes it.
func TestBreakerProbe(t *testing.T) {
	ctx := context.Background()
	f := &flaky{fail: true}
	b := NewBreaker(f, nil, BreakerSettings{Failures: 1, Open: 20 * time.Millisecond, Probes: 2})
	asked := 0
	refused := func(context.Context) error { asked++; return &Error{Status: 404} }
	if err := b.Probe(ctx, refused); err != nil || asked != 0 {
		t.Fatalf("closed: %v, asked %d", err, asked)
	}
	_, _ = b.Create(ctx, Request{})
	if err := b.Probe(ctx, refused); !errors.Is(err, ErrOpen) || asked != 0 {
		t.Fatalf("open: %v, asked %d", err, asked)
	}
	time.Sleep(30 * time.Millisecond)
	if err := b.Probe(ctx, func(context.Context) error { asked++; return ErrProvider }); !errors.Is(err, ErrProvider) || !b.Open() {
		t.Fatalf("a failed probe: %v, open %v", err, b.Open())
	}
	time.Sleep(30 * time.Millisecond)
	for range 2 {
		if err := b.Probe(ctx, refused); err != nil {
			t.Fatalf("probe: %v", err)
		}
	}
	if b.Open() || asked != 3 {
		t.Fatalf("after two answered probes: open %v, asked %d", b.Open(), asked)
	}
	if err := b.Probe(ctx, refused); err != nil || asked != 3 {
		t.Fatalf("closed again: %v, asked %d", err, asked)
	}
}
