package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/pass"
)

// The admission log over HTTP: a full page is cached for good, the open
// page for a second with a head signed by the pass key; and on Kafka:
// each entry once, as admission_logged, the same chain.
func TestAdmissionLogServedAndPublished(t *testing.T) {
	hs := newHarness(t, false)
	keys := passKeys(t, "k1")
	hs.srv.PassKeys, hs.srv.Pass = keys, pass.NewSigner(keys, "boxoffice")
	hs.createEvent(map[string]any{"id": "fair", "rows": 11, "seats_per_row": 100, "capacity": 1100})
	ctx := context.Background()
	const n = fairness.PageSize + 3
	for i := range n { // the room has space: every join is admitted at once
		if r, err := hs.store.Enqueue(ctx, "fair", "u"+strconv.Itoa(i)); err != nil || r.State != "active" {
			t.Fatalf("join %d: %+v %v", i, r, err)
		}
	}
	w := hs.raw("GET", "/api/events/fair/admissions", nil)
	var full fairness.LogDoc
	if err := json.Unmarshal(w.Body.Bytes(), &full); err != nil || w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if !full.Full || len(full.Entries) != fairness.PageSize || full.SignedHead != "" || !strings.Contains(w.Header().Get("Cache-Control"), "immutable") {
		t.Fatalf("full page: full %v, %d entries, cache %q", full.Full, len(full.Entries), w.Header().Get("Cache-Control"))
	}
	w = hs.raw("GET", "/api/events/fair/admissions?after=1000", nil)
	var open fairness.LogDoc
	if err := json.Unmarshal(w.Body.Bytes(), &open); err != nil {
		t.Fatal(err)
	}
	if open.Full || len(open.Entries) != 3 || open.Size != n || w.Header().Get("Cache-Control") != "public, max-age=1" {
		t.Fatalf("open page: %+v, cache %q", open, w.Header().Get("Cache-Control"))
	}
	all := append(full.Entries, open.Entries...)
	head, err := fairness.CheckChain(fairness.Genesis("fair"), 0, all)
	if err != nil || head != open.Head {
		t.Fatalf("chain: %v (head %s, served %s)", err, head, open.Head)
	}
	jwks, _ := keys.JWKS()
	c, err := pass.VerifyLogHead(jwks, open.SignedHead, "boxoffice", "fair", time.Now().Add(time.Minute))
	if err != nil || c.Size != n || c.Head != head {
		t.Fatalf("signed head: %+v %v", c, err)
	}
	if all[0].Reason != fairness.ReasonJoined || all[0].Seq != 1 {
		t.Fatalf("entry 1: %+v", all[0])
	}

	published, err := hs.srv.publishAdmissionLogs(ctx)
	if err != nil || published != n {
		t.Fatalf("published %d %v", published, err)
	}
	facts := hs.rec.Topic(events.TopicAdmissionLogged)
	if len(facts) != n {
		t.Fatalf("%d admission_logged facts", len(facts))
	}
	for i, f := range facts {
		e := all[i]
		want := "seq=" + strconv.FormatInt(e.Seq, 10) + " user_hash=" + e.UserHash + " reason=" + e.Reason + " prev=" + e.Prev + " hash=" + e.Hash
		if f.Sequence != e.Index || f.Reason != want || f.EventID != "fair" || f.OccurredAt.UnixMilli() != e.AtMs {
			t.Fatalf("fact %d: %+v, entry %+v", i, f, e)
		}
	}
	if again, err := hs.srv.publishAdmissionLogs(ctx); err != nil || again != 0 {
		t.Fatalf("published again: %d %v", again, err)
	}
	if _, err := hs.store.Enqueue(ctx, "fair", "late"); err != nil {
		t.Fatal(err)
	}
	if more, err := hs.srv.publishAdmissionLogs(ctx); err != nil || more != 1 || len(hs.rec.Topic(events.TopicAdmissionLogged)) != n+1 {
		t.Fatalf("the next admission: %d %v", more, err)
	}
}

// With the ledger, the gateway records every entry before it publishes
// it; a cursor ahead of the record (entries published before the ledger
// recorded them) hands the log on again from the first.
func TestAdmissionLogRecordedInTheLedger(t *testing.T) {
	hs, l, _ := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "fair", "rows": 1, "seats_per_row": 100, "capacity": 100})
	ctx := context.Background()
	for i := range 5 {
		if _, err := hs.store.Enqueue(ctx, "fair", "u"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := hs.store.SetAdmissionLogPublished(ctx, "fair", 2); err != nil {
		t.Fatal(err)
	}
	if n, err := hs.srv.publishAdmissionLogs(ctx); err != nil || n != 0 {
		t.Fatalf("a cursor ahead of the record: %d %v", n, err)
	}
	if n, err := hs.srv.publishAdmissionLogs(ctx); err != nil || n != 5 {
		t.Fatalf("handed on again: %d %v", n, err)
	}
	recorded, err := l.Admissions(ctx, "fair", 0, 10)
	if err != nil || len(recorded) != 5 {
		t.Fatalf("recorded %d %v", len(recorded), err)
	}
	page, err := hs.srv.fair().Page(ctx, "fair", 0)
	if err != nil || !slices.Equal(page.Entries, recorded) {
		t.Fatalf("the record is not the log: %v", err)
	}
	if len(hs.rec.Topic(events.TopicAdmissionLogged)) != 5 {
		t.Fatalf("%d facts", len(hs.rec.Topic(events.TopicAdmissionLogged)))
	}
}

// An event whose log forked from the ledger's record is refused, and
// does not hold the other events' logs back.
func TestAdmissionLogForkHoldsNoOtherEventBack(t *testing.T) {
	hs, l, _ := ledgerHarness(t)
	ctx := context.Background()
	for _, id := range []string{"forked", "fine"} {
		hs.createEvent(map[string]any{"id": id, "rows": 1, "seats_per_row": 10, "capacity": 10})
		if _, err := hs.store.Enqueue(ctx, id, "u1"); err != nil {
			t.Fatal(err)
		}
	}
	other := fairness.Entry{Index: 1, Seq: 1, UserHash: "x", AtMs: 1, Reason: fairness.ReasonJoined, Prev: fairness.Genesis("forked")}
	other.Hash = fairness.Link(other.Prev, other.Line())
	if err := l.RecordAdmissions(ctx, "forked", "salt", []fairness.Entry{other}); err != nil {
		t.Fatal(err)
	}
	n, err := hs.srv.publishAdmissionLogs(ctx)
	if !errors.Is(err, ledger.ErrLogForked) || n != 1 {
		t.Fatalf("published %d: %v, want the fine event's entry and the fork refused", n, err)
	}
	if fine, err := l.Admissions(ctx, "fine", 0, 10); err != nil || len(fine) != 1 {
		t.Fatalf("the other event's log: %d %v", len(fine), err)
	}
	if facts := hs.rec.Topic(events.TopicAdmissionLogged); len(facts) != 1 || facts[0].EventID != "fine" {
		t.Fatalf("facts %+v", facts)
	}
}
