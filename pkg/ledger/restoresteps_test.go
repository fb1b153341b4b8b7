package ledger_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// failCodes fails every load_codes call while on.
type failCodes struct{ on atomic.Bool }

func (h *failCodes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failCodes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); h.on.Load() && len(a) > 1 && a[0] == "fcall" && a[1] == lua.Function("load_codes") {
			err := errors.New("load_codes cut")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (h *failCodes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A step of a rebuild that fails after restore_event (here loading the
// access codes) is not left undone because the event is present again:
// the safety net's passes run it again, and only it, once the pass
// before found it undone too, until it succeeds.
func TestRestoreRunsFailedStepsAgain(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "steps", Name: "Steps", Rows: 2, SeatsPerRow: 5, Capacity: 5})
	ctx := context.Background()
	digest := g.addCode(&ledger.CodeBatch{EventID: g.event, Uses: 1, Seats: 2, Actor: "ops@example.com"}, "AAAA-1111")
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	cut := &failCodes{}
	cut.on.Store(true)
	rdb.AddHook(cut)
	store := booking.New(rdb, booking.WithPrefix(g.store.Prefix()))
	t.Cleanup(store.Close)
	r := &ledger.Restorer{Ledger: g.led, Store: store}
	pending := func(want string) {
		t.Helper()
		if ok, steps, err := store.RestorePending(ctx, g.event); err != nil || !ok || steps != want {
			t.Fatalf("restore_pending %q %v %v, want %q", steps, ok, err, want)
		}
	}

	g.flush()
	if res, err := r.RestoreMissing(ctx); err != nil || len(res) != 1 {
		t.Fatalf("rebuild: %+v %v", res, err)
	}
	pending("codes")
	if _, err := g.store.EnqueueCode(ctx, g.event, "fan1", digest); !errors.Is(err, booking.ErrInvalidCode) {
		t.Fatalf("a code join before the codes are back: %v", err)
	}
	// still failing: the first pass notes it, the second runs it again
	for range 2 {
		if _, err := r.RestoreMissing(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pending("codes")
	cut.on.Store(false)
	if _, err := r.RestoreMissing(ctx); err != nil {
		t.Fatal(err)
	}
	pending("")
	if res, err := g.store.EnqueueCode(ctx, g.event, "fan1", digest); err != nil || res.Code == nil {
		t.Fatalf("a code join once the step ran again: %+v %v", res, err)
	}
}
