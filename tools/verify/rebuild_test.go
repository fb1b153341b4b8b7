package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// admit joins users (in order) and admits them all: those the room
// takes at once, then the queue a batch at a time, each leaving at once
// so the next batch fits.
func admit(t *testing.T, store *booking.Store, eventID string, users []string) {
	t.Helper()
	ctx := context.Background()
	var in []string
	for _, u := range users {
		r, err := store.Enqueue(ctx, eventID, u)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == booking.StateActive {
			in = append(in, u)
		}
	}
	for _, u := range in {
		if _, err := store.Cancel(ctx, eventID, u); err != nil {
			t.Fatal(err)
		}
	}
	for admitted := len(in); admitted < len(users); {
		res, err := store.Promote(ctx, eventID, 500)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Promoted) == 0 {
			t.Fatalf("promotion stopped: %s after %d", res.Reason, admitted)
		}
		for _, a := range res.Promoted {
			if _, err := store.Cancel(ctx, eventID, a.UserID); err != nil {
				t.Fatal(err)
			}
		}
		admitted += len(res.Promoted)
	}
}

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// Redis is lost mid-sale and the event rebuilt from the ledger: the
// admission log continues the chain the ledger recorded, with the same
// salt, and the whole log, pages from the ledger and from Redis, verifies
// end to end. Admissions the ledger had not recorded yet are lost with
// Redis (the fans they admitted are gone from it too).
func TestVerifyAcrossARebuild(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	store := booking.New(rdb, booking.WithPrefix(prefix))
	t.Cleanup(store.Close)
	l := ledgertest.New(t)
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	keys, err := pass.ParseKeys([]string{"k1:" + base64.RawURLEncoding.EncodeToString(seed)})
	if err != nil {
		t.Fatal(err)
	}
	def, _, err := l.CreateEvent(ctx, booking.EventConfig{ID: "tour", Rows: 10, SeatsPerRow: 100, Capacity: 500})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateEvent(ctx, def.Config); err != nil {
		t.Fatal(err)
	}
	// the gateway's chains, archive and hand-on (its Kafka sink aside)
	log := fairness.NewLog(store, l)
	log.Recorded = store
	signer := pass.NewSigner(keys, issuer)
	handOn := func() int {
		n, err := log.HandOn(ctx, "tour", store, l.RecordAdmissions)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	admit(t, store, "tour", users("a", 1200))
	if n := handOn(); n != 1200 {
		t.Fatalf("handed on %d entries, want 1200", n)
	}
	before, err := log.Page(ctx, "tour", 1000)
	if err != nil {
		t.Fatal(err)
	}
	salt, err := store.FairSalt(ctx, "tour")
	if err != nil {
		t.Fatal(err)
	}
	admit(t, store, "tour", users("lost", 300)) // not yet recorded when Redis goes
	// a fan saves the signed head now: it covers only what the ledger holds
	saved, err := log.SignedHead(ctx, "tour", signer, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users("waiting", 50) {
		if _, err := store.Enqueue(ctx, "tour", u); err != nil {
			t.Fatal(err)
		}
	}

	if err := redistest.DeletePrefix(ctx, rdb, prefix); err != nil {
		t.Fatal(err)
	}
	if _, err := (&ledger.Restorer{Ledger: l, Store: store}).Restore(ctx, "tour"); err != nil {
		t.Fatal(err)
	}
	if again, err := store.FairSalt(ctx, "tour"); err != nil || again != salt {
		t.Fatalf("the rebuilt event's salt %q %v, want the recorded one", again, err)
	}
	admit(t, store, "tour", append(users("waiting", 50), users("b", 950)...))
	if n := handOn(); n != 1000 {
		t.Fatalf("handed on %d entries after the rebuild, want 1000", n)
	}

	s := &sale{store: store, signer: signer, keys: keys, log: log}
	srv := httptest.NewServer(s.handler())
	t.Cleanup(srv.Close)
	rec, err := Fetch(ctx, http.DefaultClient, srv.URL, "tour")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(rec, issuer, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatalf("the log across the rebuild does not verify: %v", err)
	}
	if r.Entries != 2200 || r.SignedSize != 2200 || r.Overtakes != 0 {
		t.Fatalf("report %+v, want 2200 entries signed, no overtakes", r)
	}
	rec.SignedHead = saved
	if r, err := Check(rec, issuer, time.Now().Add(time.Minute)); err != nil || r.SignedSize != 1200 {
		t.Fatalf("the head signed before the rebuild: %+v %v, want it to cover the 1,200 recorded entries", r, err)
	}
	if !slices.Equal(rec.Log[1000:1200], before.Entries) {
		t.Fatal("the recorded entries changed across the rebuild")
	}
	if rec.Log[1200].Prev != before.Entries[199].Hash || rec.Log[1200].UserHash != fairness.UserHash(salt, "waiting0") {
		t.Fatalf("entry 1201 does not continue the recorded chain: %+v", rec.Log[1200])
	}
	// a gateway started after the rebuild serves the same log
	s.log = fairness.NewLog(store, l)
	srv2 := httptest.NewServer(s.handler())
	t.Cleanup(srv2.Close)
	again, err := Fetch(ctx, http.DefaultClient, srv2.URL, "tour")
	if err != nil || !slices.Equal(again.Log, rec.Log) {
		t.Fatalf("a new gateway's log differs: %v", err)
	}
}
