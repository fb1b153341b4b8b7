package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ratelimit"
	"github.com/boxoffice/boxoffice/pkg/service/configtest"
)

// doHeaders is hs.do that also returns the response headers (the test
// requests come from 127.0.0.1, as fastserver.ServeRequest sets the peer).
func (hs *harness) doHeaders(method, path, token, body string, headers ...string) (resp, http.Header) {
	hs.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, req)
	r := resp{code: w.Code, raw: w.Body.String()}
	_ = json.Unmarshal(w.Body.Bytes(), &r.body)
	if w.Code >= 400 {
		checkErrorFormat(hs.t, r, path)
	}
	return r, w.Header()
}

func wantLimited(t *testing.T, r resp, h http.Header) {
	t.Helper()
	want(t, r, http.StatusTooManyRequests, httpapi.CodeRateLimited)
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s < 1 {
		t.Fatalf("Retry-After %q, want whole seconds >= 1", h.Get("Retry-After"))
	}
}

func TestJoinLimitPerIP(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 2, "seats_per_row": 3, "capacity": 1, "hold_seconds": 60})
	const limit = 5
	hs.srv.Limits = ratelimit.Config{JoinsPerMinutePerIP: limit}
	join := `{"event_id":"e1"}`
	users := func(i int) string { return hs.token("u"+strconv.Itoa(i), "") }

	// below the limit: no 429, whatever the X-Forwarded-For (the peer,
	// 127.0.0.1, is no trusted proxy: a spoofed header changes nothing)
	for i := range limit {
		r, _ := hs.doHeaders("POST", "/api/booking/request", users(i), join, "X-Forwarded-For", "192.0.2."+strconv.Itoa(i))
		want(t, r, http.StatusOK, "")
	}
	r, h := hs.doHeaders("POST", "/api/booking/request", users(limit), join, "X-Forwarded-For", "192.0.2.200")
	wantLimited(t, r, h)
	// the position poll is not a join: not limited by the join limit
	r, _ = hs.doHeaders("GET", "/api/booking/position?event_id=e1", users(0), "")
	want(t, r, http.StatusOK, "")

	// behind a trusted proxy, each client has its own bucket
	hs.srv.Limits = ratelimit.Config{JoinsPerMinutePerIP: limit}
	hs.srv.Proxies, _ = ratelimit.ParseProxies([]string{"127.0.0.0/8"})
	for i := range limit {
		for c := range 3 {
			r, _ := hs.doHeaders("POST", "/api/booking/request", users(i), join, "X-Forwarded-For", "6.6.6.6, 198.51.100."+strconv.Itoa(c))
			want(t, r, http.StatusOK, "")
		}
	}
	// a client prepending addresses to X-Forwarded-For is still itself
	r, h = hs.doHeaders("POST", "/api/booking/request", users(0), join, "X-Forwarded-For", "7.7.7.7, 198.51.100.0")
	wantLimited(t, r, h)
	r, _ = hs.doHeaders("POST", "/api/booking/request", users(0), join, "X-Forwarded-For", "198.51.100.77")
	want(t, r, http.StatusOK, "")
}

func TestRequestLimitPerUser(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 2, "seats_per_row": 3, "capacity": 1, "hold_seconds": 60})
	const limit = 4
	hs.srv.Limits = ratelimit.Config{RequestsPerSecondPerUser: limit}
	alice, bob := hs.token("alice", ""), hs.token("bob", "")
	r, _ := hs.doHeaders("POST", "/api/booking/request", alice, `{"event_id":"e1"}`)
	want(t, r, http.StatusOK, "")
	// GCRA refills one request per 250 ms: on a slow machine the loop may
	// get a refill, so count the 429s of many requests instead of timing
	limited := 0
	for range 3 * limit {
		r, h := hs.doHeaders("GET", "/api/booking/position?event_id=e1", alice, "")
		if r.code == http.StatusTooManyRequests {
			wantLimited(t, r, h)
			limited++
		} else {
			want(t, r, http.StatusOK, "")
		}
	}
	if limited == 0 {
		t.Fatalf("no 429 in %d requests of one user against %d/s", 3*limit+1, limit)
	}
	// a gin route (authenticated) counts too
	limited = 0
	for range 3 * limit {
		r, h := hs.doHeaders("POST", "/api/booking/cancel", alice, `{"event_id":"e1"}`)
		if r.code == http.StatusTooManyRequests {
			wantLimited(t, r, h)
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("cancel never limited")
	}
	// another user is not affected
	for range limit {
		r, _ := hs.doHeaders("GET", "/api/booking/position?event_id=e1", bob, "")
		want(t, r, http.StatusOK, "")
	}
}

// With the configuration's defaults (no RATE_* set), what an abuser does
// from one address or as one user is refused: joins of many users from
// one address past the per-IP burst, a user's burst of polls, and a
// user's burst of seat selections; the burst of joins a shared NAT sends
// at the start of a sale gets through.
func TestDefaultLimitsAreOn(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 2, "seats_per_row": 3, "capacity": 1, "hold_seconds": 60})
	cfg := configtest.Load(t, newConfig, minimalEnv)
	hs.srv.Limits = cfg.abuseLimits()
	join := `{"event_id":"e1"}`

	// 300 joins from one address (127.0.0.1), each with a user of its own
	limited := 0
	for i := range 300 {
		r, h := hs.doHeaders("POST", "/api/booking/request", hs.token("nat"+strconv.Itoa(i), ""), join)
		if r.code == http.StatusTooManyRequests {
			if i < cfg.RateJoinsPerMinutePerIP {
				t.Fatalf("join %d of one address refused within the burst of %d", i+1, cfg.RateJoinsPerMinutePerIP)
			}
			wantLimited(t, r, h)
			limited++
			continue
		}
		want(t, r, http.StatusOK, "")
	}
	if limited == 0 {
		t.Fatal("300 joins from one address, none refused with the default limits")
	}

	// one user's polls and seat selections in a burst
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/api/booking/position?event_id=e1", ""},
		{"POST", "/api/booking/select-seat", `{"event_id":"e1","seat_id":"A1"}`},
	} {
		tok := hs.token("nat0", "")
		limited := 0
		for range 100 {
			r, h := hs.doHeaders(tc.method, tc.path, tok, tc.body)
			if r.code == http.StatusTooManyRequests {
				wantLimited(t, r, h)
				limited++
			}
		}
		if limited == 0 {
			t.Errorf("%s %s: 100 requests of one user, none refused with the default limits", tc.method, tc.path)
		}
	}
}
