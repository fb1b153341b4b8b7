package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/receipt"
)

// Receipts signed where the booking pipeline answers the joins
// (signJoins, once the event's draw commitment is read) are the same as
// the batcher's: every queued join, alone or among concurrent ones, has
// a receipt of its own sequence that verifies with the published JWKS and
// binds its user, and every receipt is counted.
func TestQueueReceiptsSignedInPipeline(t *testing.T) {
	hs := newHarness(t, false)
	keys := passKeys(t, "k1")
	hs.srv.PassKeys, hs.srv.Pass = keys, pass.NewSigner(keys, "bo")
	t.Cleanup(hs.srv.closeReceipts)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 3, "capacity": 1})
	const n = 60
	raws := make([]string, n)
	join := func(i int) {
		r := hs.do("POST", "/api/booking/request", hs.token(fmt.Sprintf("u%d", i), ""), map[string]any{"event_id": "e1"})
		raws[i] = r.raw
	}
	// admitted, then queued alone (the batcher, then the pipeline), then
	// queued together
	for i := range 3 {
		join(i)
	}
	var wg sync.WaitGroup
	for i := 3; i < n; i++ {
		wg.Go(func() { join(i) })
	}
	wg.Wait()
	jwks := []byte(hs.do("GET", "/.well-known/jwks.json", "", nil).raw)
	for i, raw := range raws {
		var body struct {
			Status   string
			Sequence int64
			Receipt  *receipt.Receipt
		}
		if err := json.Unmarshal([]byte(raw), &body); err != nil {
			t.Fatalf("join %d: %v %s", i, err, raw)
		}
		if (body.Status == "queued") != (body.Receipt != nil) || (i > 0) != (body.Status == "queued") {
			t.Fatalf("join %d: %s", i, raw)
		}
		if body.Receipt == nil {
			continue
		}
		u := fmt.Sprintf("u%d", i)
		c, err := receipt.VerifyFor(*body.Receipt, jwks, "e1")
		if err != nil || !receipt.Binds(*body.Receipt, c, u) || body.Receipt.Leaf.Seq != body.Sequence {
			t.Fatalf("%s's receipt: %+v %v (%s)", u, c, err, raw)
		}
	}
	if _, receipts := hs.srv.receiptBatcher().Counts(); receipts != n-1 {
		t.Fatalf("%d receipts counted, want %d", receipts, n-1)
	}
}
