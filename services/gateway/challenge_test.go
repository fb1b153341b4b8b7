package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// solveAltcha does what the ALTCHA widget does with a challenge: count up
// from 0 until the counter's key starts with keyPrefix, and return the
// base64 payload the widget sends.
func solveAltcha(t *testing.T, ch altchaChallenge) string {
	t.Helper()
	salt, _ := hex.DecodeString(ch.Parameters.Salt)
	nonce, _ := hex.DecodeString(ch.Parameters.Nonce)
	for c := uint32(0); c < 1<<24; c++ {
		k := deriveKey(salt, nonce, c)
		if h := hex.EncodeToString(k[:]); strings.HasPrefix(h, ch.Parameters.KeyPrefix) {
			return altchaPayloadOf(ch, int64(c), h)
		}
	}
	t.Fatal("no solution")
	return ""
}

func altchaPayloadOf(ch altchaChallenge, counter int64, derived string) string {
	b, _ := json.Marshal(map[string]any{"challenge": ch,
		"solution": map[string]any{"counter": counter, "derivedKey": derived, "time": 12.5}})
	return base64.StdEncoding.EncodeToString(b)
}

// fetchChallenge reads GET /api/events/{id}/challenge as the widget does.
func (hs *harness) fetchChallenge(t *testing.T, id string) altchaChallenge {
	t.Helper()
	r, h := hs.doHeaders("GET", "/api/events/"+id+"/challenge", "", "")
	if r.code != http.StatusOK || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("challenge: %d %s %v", r.code, r.raw, h)
	}
	var ch altchaChallenge
	if err := json.Unmarshal([]byte(r.raw), &ch); err != nil {
		t.Fatal(err)
	}
	return ch
}

// An event with challenge "pow": a join needs a solved challenge for that
// event, used once (also across gateways), before it expires; a solution
// that is wrong, forged, for another event or the widget's test mode is
// refused; PATCH switches it both ways at once; events without it are
// unchanged.
func TestJoinChallenge(t *testing.T) {
	hs := newHarness(t, false)
	hs.srv.Challenger = NewChallenger([]byte("0123456789abcdef-test"), 2000, time.Minute, hs.srv.Redis, hs.srv.Prefix)
	hs.createEvent(map[string]any{"id": "pow", "rows": 2, "seats_per_row": 5, "capacity": 10, "challenge": "pow"})
	hs.createEvent(map[string]any{"id": "open", "rows": 2, "seats_per_row": 5, "capacity": 10})
	if r := hs.do("GET", "/api/events/pow", "", nil); r.str("challenge") != "pow" {
		t.Fatalf("event: %s", r.raw)
	}
	if r := hs.do("GET", "/api/events/open", "", nil); r.str("challenge") != "none" {
		t.Fatalf("event without a challenge: %s", r.raw)
	}
	if c := hs.rec.Topic(events.TopicEventCreated); len(c) != 2 || !strings.Contains(c[0].Reason, "challenge=pow") ||
		strings.Contains(c[1].Reason, "challenge") {
		t.Fatalf("event_created does not say the challenge: %+v", c)
	}
	join := func(user, event, payload string) resp {
		t.Helper()
		var h []string
		if payload != "" {
			h = []string{altchaHeader, payload}
		}
		return hs.do("POST", "/api/booking/request", hs.token(user, ""), map[string]any{"event_id": event}, h...)
	}
	want(t, join("a", "pow", ""), http.StatusForbidden, CodeChallengeRequired)
	want(t, join("a", "open", ""), http.StatusOK, "")

	ch := hs.fetchChallenge(t, "pow")
	p := ch.Parameters
	if p.Algorithm != "SHA-256" || p.Data.Event != "pow" || p.KeyLength != 32 || len(p.KeyPrefix) != 32 ||
		p.ExpiresAt < time.Now().Unix()+50 || len(ch.Signature) != 64 {
		t.Fatalf("challenge: %+v", ch)
	}
	payload := solveAltcha(t, ch)
	if r := join("a", "pow", payload); r.code != http.StatusOK || r.str("status") != "active" {
		t.Fatalf("join with a solved challenge: %s", r.raw)
	}
	// used once: the same solution for another user, or from another
	// gateway sharing Redis
	r := join("b", "pow", payload)
	want(t, r, http.StatusForbidden, CodeChallengeFailed)
	if !strings.Contains(r.str("message"), "already used") {
		t.Fatalf("replay: %s", r.raw)
	}
	other := NewChallenger([]byte("0123456789abcdef-test"), 2000, time.Minute, hs.srv.Redis, hs.srv.Prefix)
	if err := other.Verify(t.Context(), payload, "pow"); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("replay on another gateway: %v", err)
	}
	if ttl := hs.srv.Redis.TTL(t.Context(), hs.srv.Prefix+"altcha:"+p.Nonce).Val(); ttl <= 0 || ttl > 62*time.Second {
		t.Fatalf("used nonce kept for %v, want until the challenge's expiry", ttl)
	}

	refused := func(name, payload, why string) {
		t.Helper()
		r := join("c", "pow", payload)
		want(t, r, http.StatusForbidden, CodeChallengeFailed)
		if !strings.Contains(r.str("message"), why) {
			t.Fatalf("%s: %s, want a message with %q", name, r.raw, why)
		}
	}
	ch = hs.fetchChallenge(t, "pow")
	good := solveAltcha(t, ch)
	var sol struct {
		Solution struct {
			Counter int64 `json:"counter"`
		} `json:"solution"`
	}
	raw, _ := base64.StdEncoding.DecodeString(good)
	_ = json.Unmarshal(raw, &sol)
	refused("wrong counter", altchaPayloadOf(ch, sol.Solution.Counter+1, strings.Repeat("0", 64)), "wrong")
	forged := ch
	forged.Parameters.KeyPrefix = "0"
	refused("easier prefix, old signature", solveAltcha(t, forged), "not issued by this site")
	refused("widget test mode", base64.StdEncoding.EncodeToString([]byte(`{"challenge":null,"solution":null,"test":true}`)), "not a solved")
	refused("not base64", "%%%", "not base64")
	refused("too long", strings.Repeat("A", 5000), "too long")
	refused("another event's", solveAltcha(t, hs.fetchChallenge(t, "open")), "another event")
	expired := NewChallenger([]byte("0123456789abcdef-test"), 2000, time.Minute, hs.srv.Redis, hs.srv.Prefix)
	expired.now = func() time.Time { return time.Now().Add(-2 * time.Minute) }
	old, err := expired.New("pow")
	if err != nil {
		t.Fatal(err)
	}
	refused("expired", solveAltcha(t, old), "expired")
	// the refusals used nothing up: the good solution still admits
	want(t, join("c", "pow", good), http.StatusOK, "")

	// PATCH applies at once on this gateway
	want(t, hs.do("PATCH", "/api/admin/events/pow", hs.admin, map[string]any{"challenge": "none"}), http.StatusOK, "")
	want(t, join("d", "pow", ""), http.StatusOK, "")
	r = hs.do("PATCH", "/api/admin/events/open", hs.admin, map[string]any{"challenge": "pow"})
	if r.code != http.StatusOK || r.str("challenge") != "pow" {
		t.Fatalf("patch: %s", r.raw)
	}
	want(t, join("e", "open", ""), http.StatusForbidden, CodeChallengeRequired)
	want(t, hs.do("PATCH", "/api/admin/events/open", hs.admin, map[string]any{"challenge": "captcha"}), http.StatusBadRequest, "invalid_argument")
	want(t, hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "x", "rows": 1, "seats_per_row": 1, "challenge": "yes"}), http.StatusBadRequest, "invalid_event")
	want(t, hs.do("GET", "/api/events/nope/challenge", "", nil), http.StatusNotFound, "")
	// an unknown event's join is still a 404, not a challenge
	want(t, join("f", "nope", ""), http.StatusNotFound, "")

	// a gateway without a challenger cannot let such joins through
	hs.srv.Challenger = nil
	want(t, join("g", "open", ""), http.StatusServiceUnavailable, CodeChallengeUnavailable)
}

// The challenge's signed form is the widget's: keys sorted, no HTML
// escaping, no spaces (altcha's canonicalJSON = JSON.stringify(sortKeys)).
func TestAltchaCanonicalJSON(t *testing.T) {
	p := altchaParams{Algorithm: "SHA-256", Cost: 1, Data: altchaData{Event: "a<b>&c"}, ExpiresAt: 1700000000,
		KeyLength: 32, KeyPrefix: "ab", Nonce: "01", Salt: "02"}
	want := `{"algorithm":"SHA-256","cost":1,"data":{"event":"a<b>&c"},"expiresAt":1700000000,"keyLength":32,"keyPrefix":"ab","nonce":"01","salt":"02"}`
	if got := string(p.canonical()); got != want {
		t.Fatalf("canonical\n got %s\nwant %s", got, want)
	}
}

// PATCH early_join_seconds through the API: switching the pre-queue on
// commits a seed, changing it keeps that seed, joins follow the new
// opening, bad values are 400.
func TestEarlyJoinPatchAPI(t *testing.T) {
	hs := newHarness(t, false)
	start := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	hs.createEvent(map[string]any{"id": "pq", "rows": 1, "seats_per_row": 4, "sales_start": start.Format(time.RFC3339)})
	join := func(user string) resp {
		return hs.do("POST", "/api/booking/request", hs.token(user, ""), map[string]any{"event_id": "pq"})
	}
	want(t, join("a"), http.StatusBadRequest, "sales_not_started")
	r := hs.do("PATCH", "/api/admin/events/pq", hs.admin, map[string]any{"early_join_seconds": 7200})
	commit := r.str("draw_commit")
	if r.code != http.StatusOK || r.num("early_join_seconds") != 7200 || len(commit) != 64 {
		t.Fatalf("patch: %s", r.raw)
	}
	if r := join("a"); r.code != http.StatusOK || r.str("status") != "prequeued" {
		t.Fatalf("join after opening the pre-queue: %s", r.raw)
	}
	r = hs.do("PATCH", "/api/admin/events/pq", hs.admin, map[string]any{"early_join_seconds": 600})
	if r.code != http.StatusOK || r.num("early_join_seconds") != 600 || r.str("draw_commit") != commit {
		t.Fatalf("shortening: %s (commit was %s)", r.raw, commit)
	}
	want(t, join("b"), http.StatusBadRequest, "sales_not_started")
	if r := hs.do("GET", "/api/booking/position?event_id=pq", hs.token("a", ""), nil); r.str("status") != "prequeued" {
		t.Fatalf("the pre-queued user after shortening: %s", r.raw)
	}
	for _, bad := range []any{-1, 86401, "600"} {
		if r := hs.do("PATCH", "/api/admin/events/pq", hs.admin, map[string]any{"early_join_seconds": bad}); r.code != http.StatusBadRequest {
			t.Fatalf("early_join_seconds %v: %s", bad, r.raw)
		}
	}
}
