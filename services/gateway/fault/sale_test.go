package fault

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

type position struct {
	Status   string `json:"status"`
	State    string `json:"state"`
	Sequence int64  `json:"sequence"`
	SeatID   string `json:"seat_id"`
	Code     string `json:"code"`
}

type plan int

const (
	planPay plan = iota
	planDecline
	planCancelInRoom
	planLetExpire
	planCancelInQueue
)

func planOf(seed uint64, user string) plan {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%s", seed, user)
	switch n := h.Sum32() % 100; {
	case n < 60:
		return planPay
	case n < 72:
		return planDecline
	case n < 82:
		return planCancelInRoom
	case n < 94:
		return planLetExpire
	default:
		return planCancelInQueue
	}
}

var finalStatuses = map[string]bool{"completed": true, "failed": true, "cancelled": true, "expired": true, "sold_out": true}

// user is one buyer: its own token, a list of gateway instances (it moves
// to the next one when a request fails at the transport, as a load
// balancer would), and a counter of the requests it had to repeat.
type user struct {
	id      string
	event   string
	plan    plan
	bases   []string
	cur     int
	token   string
	hc      *http.Client
	rng     *rand.Rand
	retried *atomic.Int64

	sequence int64
	final    position
	admitted bool
	doneAt   time.Time
	err      error
}

// do sends a request until it is answered below 500 (a 5xx or a
// transport error is repeated: the client's side of "503, retry", and what
// a client does when a gateway instance dies under it).
func (u *user) do(ctx context.Context, method, path string, body, out any) (int, error) {
	for {
		c := &stacktest.Client{HTTP: u.hc, Base: u.bases[u.cur], Token: u.token}
		code, err := c.Do(method, path, body, out)
		if (err == nil && code < 500) || ctx.Err() != nil {
			return code, err
		}
		if err != nil && code < 500 && code != 0 {
			return code, err // answered, but not JSON: a real error
		}
		if code == 0 {
			u.cur = (u.cur + 1) % len(u.bases)
		}
		u.retried.Add(1)
		time.Sleep(time.Duration(100+u.rng.IntN(150)) * time.Millisecond)
	}
}

// run plays the user's plan to a final state (or ctx's end).
func (u *user) run(ctx context.Context) {
	defer func() { u.doneAt = time.Now() }()
	var join struct {
		Status   string `json:"status"`
		Sequence int64  `json:"sequence"`
	}
	if code, err := u.do(ctx, "POST", "/api/booking/request", map[string]string{"event_id": u.event}, &join); err != nil || code != 200 {
		u.err = fmt.Errorf("join: %d %v", code, err)
		return
	}
	u.sequence = join.Sequence
	if u.plan == planCancelInQueue && join.Status == "queued" {
		if code, err := u.do(ctx, "POST", "/api/booking/cancel", map[string]string{"event_id": u.event}, nil); err != nil || (code != 200 && code != 404) {
			u.err = fmt.Errorf("cancel in queue: %d %v", code, err)
			return
		}
	}
	acted := false
	for {
		if ctx.Err() != nil {
			u.err = fmt.Errorf("no final state in time; last position %+v", u.final)
			return
		}
		var pos position
		if _, err := u.do(ctx, "GET", "/api/booking/position?event_id="+u.event, nil, &pos); err != nil {
			u.err = err
			return
		}
		u.final = pos
		if pos.Sequence > 0 {
			u.sequence = pos.Sequence
		}
		if pos.Status == "active" {
			u.admitted = true
		}
		if finalStatuses[pos.Status] {
			return
		}
		if pos.Status == "active" && !acted {
			acted = true
			u.act(ctx)
			continue
		}
		time.Sleep(time.Duration(150+u.rng.IntN(150)) * time.Millisecond)
	}
}

// act is what an admitted user does; a step that fails ends the acting
// (the hold then expires), never the test: the checks are about what the
// system did with it.
func (u *user) act(ctx context.Context) {
	p := u.plan
	if p == planCancelInQueue {
		p = planPay
	}
	seat := u.pickSeat(ctx)
	if seat == "" || p == planLetExpire {
		return
	}
	if p == planCancelInRoom {
		_, _ = u.do(ctx, "POST", "/api/booking/cancel", map[string]string{"event_id": u.event}, nil)
		return
	}
	var ini struct {
		PaymentURL string `json:"payment_url"`
	}
	code, err := u.do(ctx, "POST", "/api/booking/payment/initiate", map[string]string{"event_id": u.event}, &ini)
	if err != nil || code != 200 || ini.PaymentURL == "" {
		return
	}
	action, form := "/pay", url.Values{}
	if p == planDecline {
		action, form = "/decline", url.Values{"reason": {"insufficient_funds"}}
	}
	_, _ = u.do(ctx, "POST", ini.PaymentURL+action, form, nil)
}

// pickSeat holds a random available seat; "" when none can be had.
func (u *user) pickSeat(ctx context.Context) string {
	for range 20 {
		if ctx.Err() != nil {
			return ""
		}
		var m seatMapBody
		if _, err := u.do(ctx, "GET", "/api/seats/available?event_id="+u.event, nil, &m); err != nil {
			return ""
		}
		var free []string
		for _, s := range m.seats() {
			if s.Status == "available" {
				free = append(free, s.SeatID)
			}
		}
		if len(free) == 0 {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		seat := free[u.rng.IntN(len(free))]
		code, err := u.do(ctx, "POST", "/api/booking/select-seat", map[string]string{"event_id": u.event, "seat_id": seat}, nil)
		switch {
		case err != nil:
			return ""
		case code == 200:
			return seat
		case code == 409:
			continue
		default:
			return "" // the hold ended, or a repeat of a select that succeeded
		}
	}
	return ""
}
