package stacktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/auth"
)

// Client is one user's HTTP client of the stack: relative paths go to the
// gateway, with the user's bearer token.
type Client struct {
	HTTP  *http.Client
	Base  string // prefixed to a path that is not an absolute URL
	Token string // sent as "Authorization: Bearer"; "" for none
}

// Client returns a client for user with role ("" or auth.RoleAdmin) on the
// stack's shared [Stack.HTTP] (redirects are not followed).
func (s *Stack) Client(t testing.TB, user, role string) *Client {
	t.Helper()
	return &Client{HTTP: s.HTTP, Base: s.GatewayURL(), Token: s.DevToken(t, user, role)}
}

// Do sends a request and decodes a JSON answer into out (when not nil). A
// body of type url.Values is sent as a form, any other non-nil body as
// JSON. It returns the status code; the error is non-nil when the request
// failed, the answer did not decode, or the status is 5xx (the status is
// then returned too, so a caller can retry a 503).
func (c *Client) Do(method, rawURL string, body, out any) (int, error) {
	var rd io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case url.Values:
		rd, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(j)
	}
	if !strings.HasPrefix(rawURL, "http://") && !strings.HasPrefix(rawURL, "https://") {
		rawURL = c.Base + rawURL
	}
	req, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		return 0, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(b) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s: %w", b, err)
		}
	}
	if resp.StatusCode >= 500 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, rawURL, resp.StatusCode, b)
	}
	return resp.StatusCode, nil
}

// Event is an event to create with [Stack.CreateEvent] (the admin API's
// body). Zero optional fields take the gateway's defaults.
type Event struct {
	ID             string  `json:"id"`
	Name           string  `json:"name,omitempty"`
	Rows           int     `json:"rows"`
	SeatsPerRow    int     `json:"seats_per_row"`
	Capacity       int     `json:"capacity"`
	HoldSeconds    float64 `json:"hold_seconds,omitempty"`
	GraceSeconds   float64 `json:"grace_seconds,omitempty"`
	AbandonSeconds float64 `json:"abandon_seconds,omitempty"`
	BatchSize      int     `json:"batch_size,omitempty"`
	// NoOrphanRule is sent as it is: the zero value turns the rule off
	// (the API's default is on), as the stack tests pick seats by id.
	NoOrphanRule bool `json:"no_orphan_rule"`
}

// CreateEvent creates ev through the gateway's admin API and fails the
// test unless it answers 201.
func (s *Stack) CreateEvent(t testing.TB, ev Event) {
	t.Helper()
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	code, err := s.Client(t, "stacktest-admin", auth.RoleAdmin).Do("POST", "/api/admin/events", ev, &e)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("stacktest: create event %q: %d %v %s %s", ev.ID, code, err, e.Code, e.Message)
	}
}
