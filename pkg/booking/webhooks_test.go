package booking

import (
	"strings"
	"testing"
)

// TestWebhookRefusals: each refusal counts once under its outcome, the
// last one is kept with a bounded message, and none reads as zero.
func TestWebhookRefusals(t *testing.T) {
	f := newFixture(t)
	if r, err := f.s.WebhookRefusals(f.ctx); err != nil || r.Total != 0 || len(r.ByOutcome) != 0 || !r.LastAt.IsZero() {
		t.Fatalf("none yet: %+v %v", r, err)
	}
	if err := f.s.RecordWebhookRefusal(f.ctx, "success", "bad_signature", 401, "signature mismatch"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(1000)
	long := strings.Repeat("é", MaxWebhookErrorLen)
	if err := f.s.RecordWebhookRefusal(f.ctx, "failure", "error", 503, long); err != nil {
		t.Fatal(err)
	}
	if err := f.s.RecordWebhookRefusal(f.ctx, "success", "bad_signature", 401, "signature mismatch"); err != nil {
		t.Fatal(err)
	}
	r, err := f.s.WebhookRefusals(f.ctx)
	if err != nil || r.Total != 3 || r.ByOutcome["bad_signature"] != 2 || r.ByOutcome["error"] != 1 ||
		r.LastKind != "success" || r.LastOutcome != "bad_signature" || r.LastStatus != 401 || r.LastError != "signature mismatch" ||
		!r.LastAt.Equal(f.clock.Now().Truncate(1e6)) {
		t.Fatalf("refusals: %+v %v", r, err)
	}
	if err := f.s.RecordWebhookRefusal(f.ctx, "failure", "error", 503, long); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.s.WebhookRefusals(f.ctx); len(r.LastError) > MaxWebhookErrorLen || !strings.HasPrefix(long, r.LastError) || r.LastError == "" {
		t.Fatalf("the long message kept as %d bytes", len(r.LastError))
	}
}
