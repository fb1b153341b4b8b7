package stacktest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Position is GET /api/booking/position's answer, as a buyer sees it.
type Position struct {
	Status   string `json:"status"`
	State    string `json:"state"`
	Sequence int64  `json:"sequence"`
	SeatID   string `json:"seat_id"`
	Code     string `json:"code"`
}

// Plan is what a [Buyer] does once admitted.
type Plan int

// The plans, and how often [PlanOf] picks each.
const (
	PlanPay           Plan = iota // 60 users in 100: hold a seat, pay
	PlanDecline                   // 12 in 100: hold a seat, decline the payment
	PlanCancelInRoom              // 10 in 100: hold a seat, cancel
	PlanLetExpire                 // 12 in 100: hold a seat, do nothing
	PlanCancelInQueue             // 6 in 100: cancel while queued (pay if admitted at once)
)

// PlanOf picks a user's plan from a hash of seed and user (the same seed
// gives the same plans).
func PlanOf(seed uint64, user string) Plan {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%s", seed, user)
	switch n := h.Sum32() % 100; {
	case n < 60:
		return PlanPay
	case n < 72:
		return PlanDecline
	case n < 82:
		return PlanCancelInRoom
	case n < 94:
		return PlanLetExpire
	default:
		return PlanCancelInQueue
	}
}

// FinalStatuses are the position statuses a buyer stops at.
var FinalStatuses = map[string]bool{"completed": true, "failed": true, "cancelled": true, "expired": true, "sold_out": true}

// Buyer is one user of a [Sale]: its own token and random source, a list
// of gateway instances (it moves to the next one when a request fails at
// the transport, as a load balancer would), and what happened to it.
type Buyer struct {
	ID    string
	Event string
	Plan  Plan

	bases   []string
	cur     int
	token   string
	hc      *http.Client
	rng     *rand.Rand
	retried *atomic.Int64

	// Sequence is the user's join sequence (the last one seen).
	Sequence int64
	// Final is the last position the user saw (a final status unless Err).
	Final Position
	// Admitted: the user was seen active at least once.
	Admitted bool
	// DoneAt is when the user stopped.
	DoneAt time.Time
	// JoinedAt is when the join was sent: the user's hold, if any, ends
	// no sooner than its hold time after it. PaidAt is when the pay (or
	// decline) was sent at the provider's checkout, zero if never.
	JoinedAt, PaidAt time.Time
	// Err is why the user did not reach a final status.
	Err error
}

// do sends a request until it is answered below 500 (a 5xx or a
// transport error is repeated: the client's side of "503, retry", and what
// a client does when a gateway instance dies under it).
func (u *Buyer) do(ctx context.Context, method, path string, body, out any) (int, error) {
	for {
		c := &Client{HTTP: u.hc, Base: u.bases[u.cur], Token: u.token}
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
func (u *Buyer) run(ctx context.Context) {
	defer func() { u.DoneAt = time.Now() }()
	var join struct {
		Status   string `json:"status"`
		Sequence int64  `json:"sequence"`
		Code     string `json:"code"` // of an error
		Message  string `json:"message"`
	}
	u.JoinedAt = time.Now()
	code, err := u.do(ctx, "POST", "/api/booking/request", map[string]string{"event_id": u.Event}, &join)
	if err == nil && code == 409 && join.Code == "sold_out" {
		// the last seat sold before this join reached Redis (a join
		// held up by a fault can arrive after the sale ended): a final
		// answer, as the position's sold_out is
		u.Final = Position{Status: "sold_out"}
		return
	}
	if err != nil || code != 200 {
		u.Err = fmt.Errorf("join: %d %s %q %v", code, join.Code, join.Message, err)
		return
	}
	u.Sequence = join.Sequence
	if u.Plan == PlanCancelInQueue && join.Status == "queued" {
		if code, err := u.do(ctx, "POST", "/api/booking/cancel", map[string]string{"event_id": u.Event}, nil); err != nil || (code != 200 && code != 404) {
			u.Err = fmt.Errorf("cancel in queue: %d %v", code, err)
			return
		}
	}
	acted := false
	for {
		if ctx.Err() != nil {
			u.Err = fmt.Errorf("no final state in time; last position %+v", u.Final)
			return
		}
		var pos Position
		if _, err := u.do(ctx, "GET", "/api/booking/position?event_id="+u.Event, nil, &pos); err != nil {
			u.Err = err
			return
		}
		u.Final = pos
		if pos.Sequence > 0 {
			u.Sequence = pos.Sequence
		}
		if pos.Status == "active" {
			u.Admitted = true
		}
		if FinalStatuses[pos.Status] {
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
func (u *Buyer) act(ctx context.Context) {
	p := u.Plan
	if p == PlanCancelInQueue {
		p = PlanPay
	}
	seat := u.pickSeat(ctx)
	if seat == "" || p == PlanLetExpire {
		return
	}
	if p == PlanCancelInRoom {
		_, _ = u.do(ctx, "POST", "/api/booking/cancel", map[string]string{"event_id": u.Event}, nil)
		return
	}
	var ini struct {
		PaymentURL string `json:"payment_url"`
	}
	code, err := u.do(ctx, "POST", "/api/booking/payment/initiate", map[string]string{"event_id": u.Event}, &ini)
	if err != nil || code != 200 || ini.PaymentURL == "" {
		return
	}
	action, form := "/pay", url.Values{}
	if p == PlanDecline {
		action, form = "/decline", url.Values{"reason": {"insufficient_funds"}}
	}
	u.PaidAt = time.Now()
	_, _ = u.do(ctx, "POST", ini.PaymentURL+action, form, nil)
}

// pickSeat holds a random available seat; "" when none can be had.
func (u *Buyer) pickSeat(ctx context.Context) string {
	for range 20 {
		if ctx.Err() != nil {
			return ""
		}
		var m SeatMap
		if _, err := u.do(ctx, "GET", "/api/seats/available?event_id="+u.Event, nil, &m); err != nil {
			return ""
		}
		var free []string
		for _, s := range m.Seats() {
			if s.Status == "available" {
				free = append(free, s.SeatID)
			}
		}
		if len(free) == 0 {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		seat := free[u.rng.IntN(len(free))]
		code, err := u.do(ctx, "POST", "/api/booking/select-seat", map[string]string{"event_id": u.Event, "seat_id": seat}, nil)
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

// SeatMap is GET /api/seats/available's answer (docs/http-api.md): a
// snapshot up to a second old.
type SeatMap struct {
	Sold     int `json:"sold"`
	Sections []struct {
		Row    string   `json:"row"`
		First  int      `json:"first"`
		Seats  []string `json:"seats"`
		Status string   `json:"status"`
	} `json:"sections"`
}

// SeatEntry is one seat of a [SeatMap] with its status name.
type SeatEntry struct{ SeatID, Status string }

// Seats lists every seat with its status name.
func (m SeatMap) Seats() []SeatEntry {
	names := map[byte]string{'a': "available", 'h': "held", 's': "sold"}
	var out []SeatEntry
	for _, sec := range m.Sections {
		for i := 0; i < len(sec.Status); i++ {
			id := sec.Row + strconv.Itoa(sec.First+i)
			if sec.Seats != nil {
				id = sec.Seats[i]
			}
			out = append(out, SeatEntry{id, names[sec.Status[i]]})
		}
	}
	return out
}

// SaleOptions describe a [Sale].
type SaleOptions struct {
	// Event is the (existing) event the users buy for.
	Event string
	// Users is the number of buyers, u000, u001, ….
	Users int
	// Seed picks the plans ([PlanOf] with Seed+Round) and the buyers'
	// random choices; Round tells apart sales of one seed.
	Seed  uint64
	Round int
	// Gateways the buyers spread over (user j starts on j mod len); empty:
	// the stack's gateway.
	Gateways []string
	// Spread is how long the joins are spread over; default 3 s.
	Spread time.Duration
}

// Sale is a run of buyers, each playing its [Plan] to a final status.
type Sale struct {
	Event  string
	Buyers []*Buyer
	Start  time.Time

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	retried atomic.Int64
}

// StartSale starts o.Users buyers on the stack; [Sale.Wait] waits for them.
func (s *Stack) StartSale(t testing.TB, o SaleOptions) *Sale {
	t.Helper()
	gws := o.Gateways
	if len(gws) == 0 {
		gws = []string{s.GatewayURL()}
	}
	spread := o.Spread
	if spread <= 0 {
		spread = 3 * time.Second
	}
	sl := &Sale{Event: o.Event, Buyers: make([]*Buyer, o.Users), Start: time.Now()}
	sl.ctx, sl.cancel = context.WithCancel(context.Background())
	t.Cleanup(sl.cancel)
	for j := range sl.Buyers {
		id := fmt.Sprintf("u%03d", j)
		u := &Buyer{ID: id, Event: o.Event, Plan: PlanOf(o.Seed+uint64(o.Round), id), token: s.DevToken(t, id, ""), hc: s.HTTP,
			rng: rand.New(rand.NewPCG(o.Seed, uint64(o.Round*100000+j))), retried: &sl.retried}
		u.bases = append(u.bases, gws[j%len(gws):]...)
		u.bases = append(u.bases, gws[:j%len(gws)]...)
		sl.Buyers[j] = u
		sl.wg.Go(func() {
			time.Sleep(time.Duration(j) * spread / time.Duration(o.Users))
			u.run(sl.ctx)
		})
	}
	return sl
}

// Wait waits until every buyer has stopped, stopping those that are not
// final within d from now (their Err says so).
func (sl *Sale) Wait(d time.Duration) {
	bound := time.AfterFunc(d, sl.cancel)
	sl.wg.Wait()
	bound.Stop()
}

// Retried is the number of client requests repeated so far (5xx,
// transport errors).
func (sl *Sale) Retried() int64 { return sl.retried.Load() }
