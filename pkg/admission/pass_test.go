package admission_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

type recordingPublisher struct {
	mu   sync.Mutex
	msgs []amqpx.Message
}

func (p *recordingPublisher) Publish(_ context.Context, _, _ string, m amqpx.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, m)
	return nil
}

func (p *recordingPublisher) PublishDelayed(context.Context, string, string, amqpx.Message, time.Duration) error {
	return nil
}

// A your_turn carries the admission pass, valid for the hold.
func TestYourTurnCarriesThePass(t *testing.T) {
	ctx := context.Background()
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)))
	t.Cleanup(store.Close)
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 2, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	keys, err := pass.ParseKeys([]string{"k1:" + base64.RawURLEncoding.EncodeToString(seed)})
	if err != nil {
		t.Fatal(err)
	}
	pub := &recordingPublisher{}
	ann := admission.New(store, pub, &events.Recorder{}, nil, admission.WithPass(pass.NewSigner(keys, "bo")))
	res, err := store.Enqueue(ctx, "e1", "alice")
	if err != nil || !res.State.InRoom() {
		t.Fatalf("join: %+v %v", res, err)
	}
	if err := ann.Announce(ctx, "e1", res.Outbox); err != nil {
		t.Fatal(err)
	}
	jwks, _ := keys.JWKS()
	for _, m := range pub.msgs {
		var n messages.Notification
		if json.Unmarshal(m.Body, &n) != nil || n.Type != messages.NotifyYourTurn {
			continue
		}
		c, err := pass.Verify(jwks, n.Pass, "bo", "e1", time.Now())
		if err != nil || c.Subject != "alice" || c.Seq != res.Sequence || c.ExpiresAt.Unix() != n.ExpireTime {
			t.Fatalf("your_turn pass: %+v %v (%s)", c, err, m.Body)
		}
		return
	}
	t.Fatalf("no your_turn among %d messages", len(pub.msgs))
}
