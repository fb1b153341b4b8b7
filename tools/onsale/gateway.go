package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// The simulator's HTTP client of the gateway: calls with retries on
// overload, the event it creates, its seat map and its counts.

// retried is call for a buyer's step: a 503 or a failed request is tried
// again (3 times, 0.5 s apart), as docs/http-api.md asks of a client
// (every operation is idempotent); the measured requests (join,
// progress, position) are not retried.
func (s *sim) retried(method, path, token string, body any, out any) (int, error) {
	var code int
	var err error
	for try := range 3 {
		if try > 0 {
			s.r.Retries.Add(1)
			time.Sleep(500 * time.Millisecond)
		}
		code, _, err = s.call(method, path, token, body, nil, out)
		if err == nil && code != http.StatusServiceUnavailable {
			break
		}
	}
	return code, err
}

// call sends one request; out (when not nil) decodes a JSON answer.
func (s *sim) call(method, path, token string, body any, hdr map[string]string, out any) (int, http.Header, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	u := path
	if path[0] == '/' {
		u = s.c.Gateway + path
	}
	req.SetRequestURI(u)
	req.Header.SetMethod(method)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	switch b := body.(type) {
	case nil:
	case url.Values:
		req.Header.SetContentType("application/x-www-form-urlencoded")
		req.SetBodyString(b.Encode())
	default:
		j, _ := json.Marshal(b)
		req.Header.SetContentType("application/json")
		req.SetBody(j)
	}
	if err := s.hc.Do(req, resp); err != nil {
		return 0, nil, err
	}
	h := http.Header{}
	if et := resp.Header.Peek("ETag"); len(et) > 0 {
		h.Set("ETag", string(et))
	}
	if out != nil && len(resp.Body()) > 0 {
		if err := json.Unmarshal(resp.Body(), out); err != nil {
			return resp.StatusCode(), h, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode(), h, nil
}

func (s *sim) createEvent() error {
	admin, err := s.auth.Issue("onsale-admin", auth.RoleAdmin, time.Hour)
	if err != nil {
		return err
	}
	var e apiError
	code, _, err := s.call("POST", "/api/admin/events", admin, map[string]any{"id": s.c.EventID, "name": "On-sale " + s.c.EventID,
		"rows": s.c.Rows, "seats_per_row": s.c.PerRow, "capacity": s.c.Capacity, "hold_seconds": s.c.Hold.Seconds(),
		"no_orphan_rule": false}, nil, &e) // simulated fans pick seats at random
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("create event %s: %d %v %s", s.c.EventID, code, err, e.Message)
	}
	return nil
}

type apiError struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	SeatIDs []string `json:"seat_ids"`
}

// seatIDs reads the event's seat ids from the seat map.
func (s *sim) seatIDs() ([]string, error) {
	var m stacktest.SeatMap
	code, _, err := s.call("GET", "/api/seats/available?event_id="+url.QueryEscape(s.c.EventID), "", nil, nil, &m)
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("seat map: %d %v", code, err)
	}
	var ids []string
	for _, seat := range m.Seats() {
		ids = append(ids, seat.SeatID)
	}
	return ids, nil
}

// freeSeatIDs reads the ids of the seats the seat map shows available.
func (s *sim) freeSeatIDs() ([]string, error) {
	var m stacktest.SeatMap
	code, _, err := s.call("GET", "/api/seats/available?event_id="+url.QueryEscape(s.c.EventID), "", nil, nil, &m)
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("seat map: %d %v", code, err)
	}
	var ids []string
	for _, seat := range m.Seats() {
		if seat.Status == "available" {
			ids = append(ids, seat.SeatID)
		}
	}
	return ids, nil
}

// eventCounts reads the event's counts at the end.
func (s *sim) eventCounts() (EventCounts, error) {
	var e struct {
		Counts EventCounts `json:"counts"`
	}
	code, _, err := s.call("GET", "/api/events/"+url.PathEscape(s.c.EventID), "", nil, nil, &e)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("event: %d", code)
	}
	return e.Counts, err
}

// EventCounts are the event's counts (GET /api/events/{id}).
type EventCounts struct {
	Total   int64 `json:"total"`
	Held    int64 `json:"held"`
	Sold    int64 `json:"sold"`
	Waiting int64 `json:"waiting"`
	Active  int64 `json:"active"`
	Served  int64 `json:"served"`
}
