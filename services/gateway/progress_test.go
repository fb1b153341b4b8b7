package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/receipt"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// A queued join carries a join receipt whose root is signed with the pass
// keys; its seq against the progress document gives the same place as
// the exact position; the receipt verifies offline with the published
// JWKS and binds its user, and its signed root is refused as an admission
// pass, by pkg/pass and by an independent validator applying
// docs/admission-pass.md (exp required), whose key set verifies it.
func TestQueueReceiptPlacesAgainstProgress(t *testing.T) {
	hs := newHarness(t, false)
	keys := passKeys(t, "k1")
	hs.srv.PassKeys, hs.srv.Pass = keys, pass.NewSigner(keys, "bo")
	t.Cleanup(hs.srv.closeReceipts)
	hs.srv.ProgressMaxAge = time.Nanosecond // every read sees the last change
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 3, "capacity": 1})
	users := []string{"alice", "bob", "carol", "dave"}
	receipts := map[string]receipt.Receipt{}
	for _, u := range users {
		r := hs.do("POST", "/api/booking/request", hs.token(u, ""), map[string]any{"event_id": "e1"})
		want(t, r, 200, "")
		var body struct{ Receipt *receipt.Receipt }
		if err := json.Unmarshal([]byte(r.raw), &body); err != nil {
			t.Fatal(err)
		}
		if (r.str("status") == "queued") != (body.Receipt != nil) {
			t.Fatalf("%s: status %s with receipt %s", u, r.str("status"), r.raw)
		}
		if body.Receipt != nil {
			receipts[u] = *body.Receipt
		}
	}
	jwks := []byte(hs.do("GET", "/.well-known/jwks.json", "", nil).raw)
	p := hs.do("GET", "/api/events/e1/progress", "", nil)
	want(t, p, 200, "")
	var doc progressResponse
	if err := json.Unmarshal([]byte(p.raw), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Served != 1 || doc.Waiting != 3 || doc.Paused || doc.SoldOut || doc.EventID != "e1" {
		t.Fatalf("progress %s", p.raw)
	}
	for _, u := range users[1:] {
		rc := receipts[u]
		c, err := receipt.VerifyFor(rc, jwks, "e1")
		if err != nil || !receipt.Binds(rc, c, u) || c.Issuer != "bo" {
			t.Fatalf("%s's receipt: %+v %v", u, c, err)
		}
		if _, err := receipt.VerifyFor(rc, jwks, "e2"); !errors.Is(err, receipt.ErrWrongEvent) {
			t.Fatalf("%s's receipt for another event: %v", u, err)
		}
		exact := hs.do("GET", "/api/booking/position?event_id=e1", hs.token(u, ""), nil)
		if place := rc.Leaf.Seq - doc.Served; place != exact.num("position") || rc.Leaf.Seq != exact.num("sequence") {
			t.Fatalf("%s: receipt seq %d - served %d = %d, exact position %s", u, rc.Leaf.Seq, doc.Served, place, exact.raw)
		}
		if _, err := pass.Verify(jwks, rc.Root, "bo", "e1", time.Now()); err == nil {
			t.Fatalf("%s's signed root accepted as an admission pass", u)
		}
	}
	gw := httptest.NewServer(hs.h)
	defer gw.Close()
	set, err := jwk.Fetch(context.Background(), gw.URL+"/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	root := []byte(receipts["bob"].Root)
	if _, err := jwt.Parse(root, jwt.WithKeySet(set), jwt.WithIssuer("bo"),
		jwt.WithClaimValue("event_id", "e1"), jwt.WithRequiredClaim("exp")); err == nil {
		t.Fatal("a validator of passes (exp required) accepted a receipt's signed root")
	}
	if _, err := jwt.Parse(root, jwt.WithKeySet(set), jwt.WithIssuer("bo")); err != nil {
		t.Fatalf("the signed root does not verify with the published JWKS: %v", err)
	}

	// pause: the document says so
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"paused": true}), 200, "")
	if p := hs.do("GET", "/api/events/e1/progress", "", nil); p.body["paused"] != true {
		t.Fatalf("paused event: %s", p.raw)
	}
	want(t, hs.do("GET", "/api/events/nope/progress", "", nil), 404, "event_not_found")
	want(t, hs.do("GET", "/api/events/a!b/progress", "", nil), 404, "event_not_found")
	want(t, hs.do("POST", "/api/events/e1/progress", "", nil), 405, "")
}

// Sold out: every seat sold, the document says so.
func TestProgressSoldOut(t *testing.T) {
	hs := newHarness(t, false)
	hs.srv.ProgressMaxAge = time.Nanosecond
	hs.createEvent(map[string]any{"id": "one", "seats": []string{"A1"}, "capacity": 1})
	alice := hs.token("alice", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "one"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "one", "seat_id": "A1"}), 200, "")
	pid := hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "one"}).str("payment_id")
	hs.do("POST", "/api/booking/request", hs.token("bob", ""), map[string]any{"event_id": "one"}) // waits
	if _, err := hs.store.PaymentSuccess(context.Background(), "one", "alice", pid); err != nil {
		t.Fatal(err)
	}
	hs.do("POST", "/api/booking/request", hs.token("carol", ""), map[string]any{"event_id": "one"})
	p := hs.do("GET", "/api/events/one/progress", "", nil)
	if p.body["sold_out"] != true {
		t.Fatalf("sold out event: %s", p.raw)
	}
	if c, _ := p.body["chance"].(map[string]any); c["seats"] != 0.0 {
		t.Errorf("sold out event's chance: %s", p.raw)
	}
	if r := hs.do("GET", "/api/booking/position?event_id=one", hs.token("bob", ""), nil); r.str("status") != "sold_out" || r.body["chance"] != 0.0 {
		t.Errorf("sold out position: %s", r.raw)
	}
}

// The document carries an ETag and Cache-Control; a revalidation with the
// ETag is a bodiless 304 until the queue changes, then a 200 with a new
// ETag. An unchanged queue keeps its ETag across refreshes.
func TestProgressETag(t *testing.T) {
	hs := newHarness(t, false)
	hs.srv.ProgressMaxAge = time.Nanosecond
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 3, "capacity": 1})
	w := hs.raw("GET", "/api/events/e1/progress", nil)
	etag := w.Header().Get("ETag")
	if w.Code != 200 || etag == "" || w.Header().Get("Cache-Control") != "public, max-age=1" {
		t.Fatalf("first read: %d ETag %q Cache-Control %q", w.Code, etag, w.Header().Get("Cache-Control"))
	}
	w = hs.raw("GET", "/api/events/e1/progress", map[string]string{"If-None-Match": etag})
	if w.Code != 304 || w.Body.Len() != 0 || w.Header().Get("ETag") != etag {
		t.Fatalf("revalidation: %d %q ETag %q", w.Code, w.Body, w.Header().Get("ETag"))
	}
	hs.do("POST", "/api/booking/request", hs.token("alice", ""), map[string]any{"event_id": "e1"})
	hs.do("POST", "/api/booking/request", hs.token("bob", ""), map[string]any{"event_id": "e1"})
	w = hs.raw("GET", "/api/events/e1/progress", map[string]string{"If-None-Match": etag})
	if w.Code != 200 || w.Header().Get("ETag") == etag {
		t.Fatalf("after joins: %d ETag %q (was %q)", w.Code, w.Header().Get("ETag"), etag)
	}
}

// However many clients poll, each gateway instance reads Redis once per
// max age per event: 64 concurrent polls, then 64 more while the snapshot
// is fresh, cost one command; the document equals the notifier's reader
// (Store.Counts) at that moment.
func TestProgressReadsRedisOncePerMaxAge(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 3, "capacity": 1})
	for _, u := range []string{"a", "b", "c"} {
		hs.do("POST", "/api/booking/request", hs.token(u, ""), map[string]any{"event_id": "e1"})
	}
	counter := &countCmds{}
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(counter)
	hs.srv.Store = booking.New(rdb, booking.WithPrefix(hs.store.Prefix()))
	hs.srv.ProgressMaxAge = time.Hour // no refresh during the test, however slow the machine
	var bodies sync.Map
	for round := range 2 {
		var wg sync.WaitGroup
		var bad atomic.Int64
		for range 64 {
			wg.Go(func() {
				w := hs.raw("GET", "/api/events/e1/progress", nil)
				if w.Code != 200 {
					bad.Add(1)
				}
				bodies.Store(w.Body.String(), true)
			})
		}
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("round %d: %d failed reads", round, bad.Load())
		}
	}
	if n := counter.n.Load(); n != 1 {
		t.Fatalf("128 polls sent %d Redis commands, want 1", n)
	}
	c, err := hs.store.Counts(context.Background(), "e1")
	if err != nil {
		t.Fatal(err)
	}
	var got []progressResponse
	bodies.Range(func(k, _ any) bool {
		var p progressResponse
		_ = json.Unmarshal([]byte(k.(string)), &p)
		got = append(got, p)
		return true
	})
	want := []progressResponse{{EventID: "e1", Served: c.Served, Waiting: c.Waiting, RatePerMin: c.AdmittedLastMinute,
		Chance: got[0].Chance, SalesStart: got[0].SalesStart}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("documents (-want +got):\n%s", diff)
	}
}

// The chance of a ticket: the progress document carries the event's
// parameters (pkg/chance, from the counts it reads anyway), and a queued
// user's exact position carries its chance, the document's parameters at
// position - 1 users ahead: 1 at the front (more seats than anyone ahead
// could take), falling with the place. Once the snapshot is read, a
// position poll costs its one script, as before.
func TestChanceOnProgressAndPosition(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 2, "capacity": 1})
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace"}
	for _, u := range users {
		want(t, hs.do("POST", "/api/booking/request", hs.token(u, ""), map[string]any{"event_id": "e1"}), 200, "")
	}
	p := hs.do("GET", "/api/events/e1/progress", "", nil)
	want(t, p, 200, "")
	var doc progressResponse
	if err := json.Unmarshal([]byte(p.raw), &doc); err != nil {
		t.Fatal(err)
	}
	e, err := hs.store.GetEvent(context.Background(), "e1")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Chance != chanceOf(e, orderStat{}) || doc.Chance.Seats <= 0 || doc.Chance.MaxPerPlace < 1 {
		t.Fatalf("progress chance %+v, want %+v", doc.Chance, chanceOf(e, orderStat{}))
	}
	counter := &countCmds{}
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(counter)
	hs.srv.Store = booking.New(rdb, booking.WithPrefix(hs.store.Prefix()))
	hs.srv.ProgressMaxAge = time.Hour // the snapshot read above stays fresh
	prev := 2.0
	for _, u := range users[1:] {
		r := hs.do("GET", "/api/booking/position?event_id=e1", hs.token(u, ""), nil)
		want(t, r, 200, "")
		got, ok := r.body["chance"].(float64)
		if r.str("status") != "queued" || !ok {
			t.Fatalf("%s: %s", u, r.raw)
		}
		pos := r.num("position")
		if w := doc.Chance.Chance(pos - 1); got != w || got > prev || (pos == 1 && got != 1) {
			t.Fatalf("%s at %d: chance %v, want %v (no more than %v before)", u, pos, got, w, prev)
		}
		prev = got
	}
	if prev >= 0.5 {
		t.Errorf("the last of six waiting for two seats: chance %v", prev)
	}
	if n := counter.n.Load(); n != int64(len(users)-1) {
		t.Errorf("%d position polls sent %d Redis commands, want one each", len(users)-1, n)
	}
	// the admitted user's position has no chance
	if r := hs.do("GET", "/api/booking/position?event_id=e1", hs.token("alice", ""), nil); r.body["chance"] != nil {
		t.Errorf("admitted: %s", r.raw)
	}
}

// Seats per order come from the payments this instance started: each
// counted once (a repeated initiate reuses the payment), with its seats.
func TestChanceCountsStartedOrders(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	alice := hs.token("alice", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_ids": []string{"A1", "A2"}}), 200, "")
	for range 2 {
		want(t, hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "e1"}), 200, "")
	}
	if got := hs.srv.orderSizes.of("e1"); got != (orderStat{orders: 1, seats: 2, squares: 4}) {
		t.Fatalf("orders seen %+v, want one of two seats", got)
	}
	if got := hs.srv.orderSizes.of("e2"); got != (orderStat{}) {
		t.Fatalf("another event: %+v", got)
	}
}
