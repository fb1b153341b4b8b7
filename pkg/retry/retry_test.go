package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
)

func TestDelayDoublesToTheCap(t *testing.T) {
	for _, tc := range []struct {
		n        int
		min, max time.Duration
		want     time.Duration
	}{
		{0, time.Second, time.Minute, time.Second},
		{1, time.Second, time.Minute, 2 * time.Second},
		{5, time.Second, time.Minute, 32 * time.Second},
		{6, time.Second, time.Minute, time.Minute},
		{60, time.Second, time.Minute, time.Minute},
		{0, 2 * time.Minute, time.Minute, time.Minute}, // min above max: max
	} {
		if got := Delay(tc.n, tc.min, tc.max); got != tc.want {
			t.Errorf("Delay(%d, %v, %v) = %v, want %v", tc.n, tc.min, tc.max, got, tc.want)
		}
	}
}

func TestExponentialJitterStaysWithinBounds(t *testing.T) {
	b := Exponential(100*time.Millisecond, 400*time.Millisecond)
	for n := range 50 {
		nominal := Delay(n, 100*time.Millisecond, 400*time.Millisecond)
		got := b.NextBackOff()
		lo, hi := time.Duration(float64(nominal)*(1-Jitter)), time.Duration(float64(nominal)*(1+Jitter))+1
		if got < lo || got > hi {
			t.Fatalf("delay %d = %v, want within [%v, %v]", n, got, lo, hi)
		}
	}
}

func TestPermanentStopsRetryAndIsRecognised(t *testing.T) {
	boom := errors.New("boom")
	if Permanent(nil) != nil {
		t.Fatal("Permanent(nil) is not nil")
	}
	err := fmt.Errorf("handle: %w", Permanent(boom))
	if !IsPermanent(err) || !errors.Is(err, boom) || err.Error() != "handle: permanent: boom" {
		t.Fatalf("wrapped permanent error %q: IsPermanent %v, Is boom %v", err, IsPermanent(err), errors.Is(err, boom))
	}
	if IsPermanent(boom) || !IsPermanent(backoff.Permanent(boom)) {
		t.Fatal("IsPermanent does not tell backoff's marker from a plain error")
	}
	calls := 0
	_, got := backoff.Retry(context.Background(), func() (int, error) {
		calls++
		return 0, Permanent(boom)
	}, backoff.WithBackOff(Exponential(time.Millisecond, time.Millisecond)))
	if calls != 1 || !errors.Is(got, boom) {
		t.Fatalf("Retry of a permanent error: %d calls, error %v", calls, got)
	}
}
