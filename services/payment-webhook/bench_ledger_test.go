package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission/admissiontest"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// BenchmarkSuccessWebhookWithLedger: signed success webhooks per second
// through the handler, each doing its Lua step on the real Redis and its
// order on the real PostgreSQL (a schema of its own), in parallel
// (GOMAXPROCS × -cpu goroutines; 50 with -cpu 50 would be the provider's
// concurrency). Kafka and RabbitMQ are in-memory fakes: this measures what
// the ledger adds. Setup (b.N users brought to payment_pending, their
// payment ids recorded) is outside the timer. docs/benchmarks.md has the
// command and the numbers.
func BenchmarkSuccessWebhookWithLedger(b *testing.B) { benchSuccess(b, true) }

// BenchmarkSuccessWebhookRedisOnly is the same without the ledger: the
// baseline of the same run.
func BenchmarkSuccessWebhookRedisOnly(b *testing.B) { benchSuccess(b, false) }

func benchSuccess(b *testing.B, withLedger bool) {
	ctx := context.Background()
	rdb := redistest.Client(b)
	store := booking.New(rdb, booking.WithPrefix(redistest.Prefix(b)))
	b.Cleanup(store.Close)
	led := ledgertest.New(b) // the default pool, ledger.DefaultMaxConns
	wh := &Webhooks{Store: store, Announcer: &admissiontest.Recorder{}, Kafka: &events.Recorder{}, Secret: secret,
		Tolerance: 5 * time.Minute}
	if withLedger {
		wh.Ledger = led
	}
	h := wh.Handler()
	n := b.N
	seats := max(n, 1)
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: seats, Capacity: seats,
		Hold: time.Hour}); err != nil {
		b.Fatal(err)
	}
	bodies := make([][]byte, n)
	for i := range n {
		user, seat := fmt.Sprintf("u%06d", i), fmt.Sprintf("A%d", i+1)
		if _, err := store.Enqueue(ctx, "e1", user); err != nil {
			b.Fatal(err)
		}
		if _, err := store.LockSeat(ctx, "e1", user, seat); err != nil {
			b.Fatal(err)
		}
		hold, err := store.InitiatePayment(ctx, "e1", user, "pay_"+user)
		if err != nil {
			b.Fatal(err)
		}
		if err := led.RecordPayment(ctx, ledger.Payment{PaymentID: hold.PaymentID, EventID: "e1", UserID: user,
			SeatID: seat, Sequence: hold.Sequence, Amount: 5000}); err != nil {
			b.Fatal(err)
		}
		bodies[i] = body(user, seat, hold.PaymentID, "")
	}
	var next, failed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bd := bodies[next.Add(1)-1]
			req := httptest.NewRequest("POST", payment.PathSuccess, strings.NewReader(string(bd)))
			req.Header.Set(payment.SignatureHeader, payment.Sign(secret, time.Now(), bd))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				failed.Add(1)
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d webhooks failed", f)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "webhooks/s")
	orders, err := led.EventOrders(ctx, "e1")
	if withLedger && (err != nil || len(orders) != n) {
		b.Fatalf("%d orders, want %d (%v)", len(orders), n, err)
	}
}
