package main

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// The buyers: a served user's exact position, then a seat and the
// sandbox's payment, or abandoning.

// buy serves handed-over users: the exact position, then (when admitted)
// a seat and the sandbox's payment, or abandoning.
func (s *sim) buy(ctx context.Context, rng *rand.Rand) {
	for {
		select {
		case <-ctx.Done():
			return
		case i := <-s.exact:
			s.serve(ctx, rng, i)
			s.busy.Add(-1)
		}
	}
}

func (s *sim) serve(ctx context.Context, rng *rand.Rand, i int) {
	tok := s.token(i)
	var p struct {
		Status   string `json:"status"`
		ExpireAt string `json:"expire_at"`
		Code     string `json:"code"`
	}
	for {
		t0 := time.Now()
		code, _, err := s.call("GET", "/api/booking/position?event_id="+url.QueryEscape(s.c.EventID), tok, nil, nil, &p)
		s.r.Position.add(time.Since(t0))
		if err != nil || code != http.StatusOK {
			s.r.fail("position", code, p.Code, err)
			return
		}
		if p.Status != "queued" || ctx.Err() != nil {
			break
		}
		// served is an upper bound while users ahead leave: wait a poll
		s.r.ServedButWaiting.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.c.PollEvery):
		}
	}
	switch p.Status {
	case "active":
		s.cal.outcome[i].Store(outcomeAdmitted)
	case "sold_out":
		s.cal.outcome[i].Store(outcomeMissed)
		s.r.SoldOut.Add(1)
		return
	default: // expired, cancelled, abandoned before anyone got to it
		s.cal.outcome[i].Store(outcomeMissed)
		s.r.TurnLost.Add(1)
		return
	}
	s.r.Admitted.Add(1)
	s.r.admittedAt(time.Now())
	if exp, err := time.Parse(time.RFC3339Nano, p.ExpireAt); err == nil {
		s.r.TurnByPoll.add(time.Since(exp.Add(-s.c.Hold)))
	}
	if s.c.Think > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(rng.Int64N(int64(s.c.Think)))):
		}
	}
	if rng.Float64() >= s.c.PayShare || !s.pay(rng, tok) {
		var e apiError
		code, err := s.retried("POST", "/api/booking/cancel", tok, map[string]string{"event_id": s.c.EventID}, &e)
		if err != nil || code != http.StatusOK {
			s.r.fail("cancel", code, e.Code, err)
			return
		}
		s.r.Abandoned.Add(1)
	}
}

// pay holds a random free seat (another on a conflict, up to 5 tries) and
// pays for it in the sandbox; false when no seat could be held.
func (s *sim) pay(rng *rand.Rand, tok string) bool {
	held := false
	for try := range 5 {
		seat := s.seats[rng.IntN(len(s.seats))]
		if try > 0 && s.c.FreeSeats {
			free, err := s.freeSeatIDs()
			if err != nil {
				s.r.fail("seat map", 0, "", err)
				return false
			}
			if len(free) == 0 {
				return false
			}
			seat = free[rng.IntN(len(free))]
		}
		var e apiError
		code, err := s.retried("POST", "/api/booking/select-seat", tok, map[string]any{"event_id": s.c.EventID, "seat_id": seat}, &e)
		if err == nil && code == http.StatusOK {
			held = true
			break
		}
		if code != http.StatusConflict {
			s.r.fail("select-seat", code, e.Code, err)
			return false
		}
		s.r.SeatConflicts.Add(1)
	}
	if !held {
		return false
	}
	var ini struct {
		URL  string `json:"payment_url"`
		Code string `json:"code"`
	}
	code, err := s.retried("POST", "/api/booking/payment/initiate", tok, map[string]string{"event_id": s.c.EventID}, &ini)
	if err != nil || code != http.StatusOK || ini.URL == "" {
		s.r.fail("initiate", code, ini.Code, err)
		return false
	}
	code, err = s.retried("POST", ini.URL+"/pay", "", url.Values{}, nil)
	if err != nil || code != http.StatusSeeOther {
		s.r.fail("sandbox pay", code, "", err)
		return false
	}
	s.r.Paid.Add(1)
	return true
}
