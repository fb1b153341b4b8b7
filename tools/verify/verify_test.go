package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/receipt"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// joinReceipt is the join receipt of user's join of eventID with seq at
// (a batch of one), as the join answers it.
func joinReceipt(s *pass.Signer, eventID, user string, seq int64, at time.Time) string {
	out := make([]receipt.Receipt, 1)
	if err := receipt.Sign(s, []receipt.Join{{EventID: eventID, Seq: seq, At: at, UserID: user}}, out); err != nil {
		return ""
	}
	return string(out[0].AppendJSON(nil))
}

// clock is the sale's test clock (booking.WithClock), behind real time so
// every signature's iat is in the past of the verifier's.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// sale is a finished sale on the real Redis, served as the gateway serves
// its fairness record.
type sale struct {
	store   *booking.Store
	signer  *pass.Signer
	keys    pass.Keys
	srv     *httptest.Server
	tickets map[string]string // user → join receipt (JSON)
	seqs    map[string]int64
	clock   *clock
	log     *fairness.Log // the gateway's chains (nil: over store alone)
}

const (
	prequeued = 1000
	queued    = 9000
	issuer    = "bo"
)

// newSale is a sale with nothing in it yet: a store on the real Redis
// whose clock starts three hours back, and a fresh signing key.
func newSale(t *testing.T) *sale {
	t.Helper()
	c := &clock{now: time.Now().Add(-3 * time.Hour).Truncate(time.Second)}
	store := booking.New(redistest.Client(t), booking.WithPrefix(strings.TrimSuffix(redistest.Prefix(t), ":")), booking.WithClock(c.Now))
	t.Cleanup(store.Close)
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	keys, err := pass.ParseKeys([]string{"k1:" + base64.RawURLEncoding.EncodeToString(seed)})
	if err != nil {
		t.Fatal(err)
	}
	return &sale{store: store, signer: pass.NewSigner(keys, issuer), keys: keys, clock: c,
		tickets: map[string]string{}, seqs: map[string]int64{}}
}

// runSale: 1,000 users join the pre-queue, 9,000 join after the start,
// every batch of 1,000 is admitted and leaves, and one more joins an
// empty queue and is admitted at once: 10,001 admissions.
func runSale(t *testing.T) *sale {
	t.Helper()
	ctx := context.Background()
	s := newSale(t)
	c, store := s.clock, s.store
	start := c.Now().Add(time.Hour)
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "tour", Rows: 101, SeatsPerRow: 100, Capacity: 1000,
		SalesStart: start, EarlyJoin: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	join := func(users []string) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		next := make(chan string)
		for range 16 {
			wg.Go(func() {
				for u := range next {
					r, err := store.Enqueue(ctx, "tour", u)
					if err != nil {
						t.Error(err)
						continue
					}
					tk := joinReceipt(s.signer, "tour", u, r.Sequence, c.Now())
					mu.Lock()
					s.seqs[u], s.tickets[u] = r.Sequence, tk
					mu.Unlock()
				}
			})
		}
		for _, u := range users {
			next <- u
		}
		close(next)
		wg.Wait()
	}
	names := func(p string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = p + strconv.Itoa(i)
		}
		return out
	}
	join(names("p", prequeued))
	c.Advance(time.Hour)
	join(names("u", queued))
	for admitted := 0; admitted < prequeued+queued; {
		res, err := store.Promote(ctx, "tour", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason == "draw_pending" {
			if _, err := store.CloseDraw(ctx, "tour"); err != nil {
				t.Fatal(err)
			}
			if err := store.MarkDrawn(ctx, "tour"); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if len(res.Promoted) == 0 {
			t.Fatalf("promotion stopped: %s after %d", res.Reason, admitted)
		}
		admitted += len(res.Promoted)
		var wg sync.WaitGroup
		for _, a := range res.Promoted {
			wg.Go(func() {
				if _, err := store.Cancel(ctx, "tour", a.UserID); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		c.Advance(time.Second)
	}
	if r, err := store.Enqueue(ctx, "tour", "last"); err != nil || r.State != booking.StateActive {
		t.Fatalf("a join into an empty queue: %+v %v", r, err)
	}
	s.srv = httptest.NewServer(s.handler())
	t.Cleanup(s.srv.Close)
	return s
}

// handler serves the fairness record as the gateway does
// (services/gateway/fairness_handlers.go), from the same builders.
func (s *sale) handler() http.Handler {
	log := s.log
	if log == nil {
		log = fairness.NewLog(s.store, nil)
	}
	fail := func(w http.ResponseWriter, status int, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(httpapi.Error{StatusCode: status, Message: msg})
	}
	num := func(w http.ResponseWriter, r *http.Request, name string) (int64, bool) {
		n, err := strconv.ParseInt(r.URL.Query().Get(name), 10, 64)
		if err != nil || n < 0 {
			fail(w, 400, name+" must be a non-negative integer")
			return 0, false
		}
		return n, true
	}
	reply := func(w http.ResponseWriter, v any, err error) {
		if errors.Is(err, booking.ErrEventNotFound) {
			fail(w, 404, "event not found")
			return
		}
		if err != nil {
			fail(w, 500, err.Error())
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		b, _ := s.keys.JWKS()
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /api/events/{id}/draw", func(w http.ResponseWriter, r *http.Request) {
		if page, ok := num(w, r, "page"); ok {
			d, err := fairness.BuildDraw(r.Context(), s.store, r.PathValue("id"), r.URL.Query().Get("phase"), page)
			reply(w, d, err)
		}
	})
	mux.HandleFunc("GET /api/events/{id}/admissions", func(w http.ResponseWriter, r *http.Request) {
		if after, ok := num(w, r, "after"); ok {
			d, err := log.Doc(r.Context(), r.PathValue("id"), after, s.signer, s.store.Clock)
			reply(w, d, err)
		}
	})
	return mux
}

// A sale of 10,000 users verifies: the draw recomputes, the chain and its
// signed head check, nobody was overtaken, and a receipt finds its entry.
func TestVerifyASale(t *testing.T) {
	s := runSale(t)
	ctx := context.Background()
	rec, err := Fetch(ctx, http.DefaultClient, s.srv.URL, "tour")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(rec, issuer, time.Now())
	if err != nil {
		t.Fatalf("a fair sale does not verify: %v", err)
	}
	if r.Entries != prequeued+queued+1 || r.Drawn != prequeued || r.Overtakes != 0 || r.SignedSize != int64(r.Entries) {
		t.Fatalf("report %+v", r)
	}
	if rec.Log[0].Reason != fairness.ReasonPromoted || rec.Log[len(rec.Log)-1].Reason != fairness.ReasonJoined {
		t.Fatalf("reasons: first %s, last %s", rec.Log[0].Reason, rec.Log[len(rec.Log)-1].Reason)
	}
	for _, u := range []string{"u0", "u4500", "u8999"} {
		rr, err := CheckReceipt(rec, s.tickets[u], issuer, time.Now())
		if err != nil || rr.Seq != s.seqs[u] || rr.Admitted == 0 || rr.Overtakes != 0 {
			t.Fatalf("receipt of %s: %+v %v", u, rr, err)
		}
	}
	var out bytes.Buffer
	if err := run(ctx, &out, s.srv.URL, "tour", issuer, s.tickets["u42"], "", "", ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 overtakes") || !strings.Contains(out.String(), "0 who joined later") {
		t.Fatalf("output: %s", out.String())
	}
	if err := run(ctx, &out, s.srv.URL, "nope", issuer, "", "", "", ""); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("an unknown event: %v", err)
	}
	t.Run("tampered", func(t *testing.T) { tamper(t, s, rec) })
}

// rechain recomputes every hash from the first entry on, as a forger
// would who rewrites the log.
func rechain(rec *Record) {
	prev := fairness.Genesis(rec.EventID)
	for i := range rec.Log {
		rec.Log[i].Index = int64(i) + 1
		rec.Log[i].Prev = prev
		rec.Log[i].Hash = fairness.Link(prev, rec.Log[i].Line())
		prev = rec.Log[i].Hash
	}
}

func tamper(t *testing.T, s *sale, rec Record) {
	clone := func() Record {
		c := rec
		c.Log = slices.Clone(rec.Log)
		c.Draw.Entries = slices.Clone(rec.Draw.Entries)
		return c
	}
	resign := func(c *Record) {
		last := c.Log[len(c.Log)-1]
		c.SignedHead, _ = s.signer.SignLogHead(c.EventID, last.Index, last.Hash, s.clock.Now())
	}
	for _, tc := range []struct {
		name, want string
		change     func(*Record)
	}{
		{"one entry changed", "entry 5000 was changed", func(c *Record) { c.Log[4999].AtMs++ }},
		{"one entry deleted", "an entry is missing", func(c *Record) { c.Log = slices.Delete(c.Log, 700, 701) }},
		{"two entries reordered", "an entry is missing", func(c *Record) { c.Log[10], c.Log[11] = c.Log[11], c.Log[10] }},
		{"reordered and chained again", "the log was rewritten", func(c *Record) {
			c.Log[10], c.Log[11] = c.Log[11], c.Log[10]
			rechain(c)
		}},
		{"the last entry deleted", "entries were deleted", func(c *Record) { c.Log = c.Log[:len(c.Log)-1] }},
		{"reordered, chained and signed again by the key's holder", "went ahead of someone due before them", func(c *Record) {
			c.Log[2000], c.Log[2001] = c.Log[2001], c.Log[2000]
			rechain(c)
			resign(c)
		}},
		{"the head's signature", "does not verify", func(c *Record) { c.SignedHead = c.SignedHead[:len(c.SignedHead)-4] + "AAAA" }},
		{"the draw's order", "the draw's rank", func(c *Record) {
			c.Draw.Entries[3].UserHash, c.Draw.Entries[4].UserHash = c.Draw.Entries[4].UserHash, c.Draw.Entries[3].UserHash
		}},
		{"a draw entry removed", "the draw lists 999 users", func(c *Record) { c.Draw.Entries = c.Draw.Entries[1:] }},
		{"the draw's seed", "does not match the commitment", func(c *Record) { c.Draw.Seed = strings.Repeat("00", 32) }},
	} {
		c := clone()
		tc.change(&c)
		if _, err := Check(c, issuer, time.Now()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	// receipts: another event's, a bad signature, someone overtaken
	other := joinReceipt(s.signer, "other", "u1", s.seqs["u1"], s.clock.Now())
	if _, err := CheckReceipt(rec, other, issuer, time.Now()); err == nil || !strings.Contains(err.Error(), "another event") {
		t.Errorf("another event's receipt: %v", err)
	}
	tk := s.tickets["u1"]
	forged := strings.TrimSuffix(tk, `"}`) + `AAAA"}` // the signed root's signature, longer
	if _, err := CheckReceipt(rec, forged, issuer, time.Now()); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("a receipt with a bad signature: %v", err)
	}
	claimed := strings.Replace(tk, `"seq":`+strconv.FormatInt(s.seqs["u1"], 10), `"seq":`+strconv.FormatInt(s.seqs["u1"]+1000, 10), 1)
	if _, err := CheckReceipt(rec, claimed, issuer, time.Now()); !errors.Is(err, receipt.ErrBadPath) {
		t.Errorf("a receipt claiming another place: %v", err)
	}
	if _, err := CheckReceipt(rec, "not a receipt", issuer, time.Now()); err == nil || !strings.Contains(err.Error(), "no known kind") {
		t.Errorf("no receipt: %v", err)
	}
	c := clone()
	i := slices.IndexFunc(c.Log, func(e fairness.Entry) bool { return e.Seq == s.seqs["u100"] })
	moved := c.Log[i]
	c.Log = append(slices.Delete(c.Log, i, i+1), moved) // admitted last
	rechain(&c)
	rr, err := CheckReceipt(c, s.tickets["u100"], issuer, time.Now())
	if err != nil || rr.Overtakes < queued-200 {
		t.Errorf("an overtaken receipt: %+v %v", rr, err)
	}
}
