package admission_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// Past the sales end the promoter admits nobody into a free slot and
// tells the event's connections sales_ended, once however often it
// promotes.
func TestPromoterAnnouncesTheSalesEndOnce(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)), booking.WithClock(clock))
	t.Cleanup(store.Close)
	end := now.Add(time.Minute)
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 10, Capacity: 1,
		SalesEnd: end}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"in", "waits"} {
		if _, err := store.Enqueue(ctx, "e1", u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Cancel(ctx, "e1", "in"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = end.Add(time.Millisecond)
	mu.Unlock()
	pub := &recordingPublisher{}
	ann := admission.New(store, pub, &events.Recorder{}, nil, admission.WithClock(clock))
	p := admission.NewPromoter(store, ann, nil)
	for range 3 {
		if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 0 {
			t.Fatalf("promote after the end: admitted %d, %v", n, err)
		}
	}
	sent := 0
	for _, m := range pub.msgs {
		var n messages.Notification
		if json.Unmarshal(m.Body, &n) == nil && n.Type == messages.NotifySalesEnded && n.EventID == "e1" && n.UserID == "" {
			sent++
		}
	}
	if sent != 1 {
		t.Fatalf("sales_ended sent %d times, want 1 (of %d messages)", sent, len(pub.msgs))
	}
}
