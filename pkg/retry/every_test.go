package retry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Every sweeps on each tick, logs a failed sweep and goes on, and returns
// when its context ends.
func TestEverySweepsUntilTheContextEnds(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- retry.Every(ctx, 5*time.Millisecond, zap.New(core), "test items", func(context.Context) (int, error) {
			switch calls.Add(1) {
			case 1:
				return 0, errors.New("down")
			case 2:
				return 3, nil
			case 3:
				cancel()
			}
			return 0, nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Every returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if got := logs.FilterMessage("test items left unfinished; retried at the next tick").Len(); got != 1 {
		t.Errorf("%d warnings for the failed sweep, want 1", got)
	}
	if got := logs.FilterMessage("test items finished by the sweep").Len(); got != 1 {
		t.Errorf("%d notes of finished items, want 1", got)
	}
	if calls.Load() < 3 {
		t.Errorf("%d sweeps, want at least 3", calls.Load())
	}
}
