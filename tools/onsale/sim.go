package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// Config is one on-sale.
type Config struct {
	Gateway  string // base URL
	Notifier string // WebSocket URL; "" for no WebSocket sample
	Redis    string // address for INFO; "" for none
	Secret   string // the stack's JWT_SECRET
	EventID  string
	Create   bool // create the event (Rows × PerRow seats, Capacity, Hold)
	Rows     int
	PerRow   int
	Capacity int
	Hold     time.Duration

	Users int
	Seed  uint64
	// Arrive is the arrival window; Spike the share of users arriving in
	// its first twentieth or so (exponential, mean Arrive/20), the others
	// uniformly over the window.
	Arrive   time.Duration
	Spike    float64
	Duration time.Duration // the run ends after this, finished or not
	Conns    int           // concurrent joins
	// Pollers poll the progress document every PollEvery, standing for
	// the waiting crowd (whose polls a CDN would absorb): every waiting
	// user compares its sequence with what they see.
	Pollers   int
	PollEvery time.Duration
	// WSSample users who queue hold a notifier WebSocket: every WSEvery-th
	// user, from the start (so that they are admitted within the run).
	WSSample int
	WSEvery  int
	Buyers   int     // admitted users served at once
	PayShare float64 // share of admitted users who pay; the others abandon
	Think    time.Duration
}

// DefaultConfig is a small on-sale.
func DefaultConfig() Config {
	return Config{Rows: 20, PerRow: 50, Capacity: 200, Hold: 2 * time.Minute, Users: 10_000, Seed: 1,
		Arrive: 30 * time.Second, Spike: 0.6, Duration: 5 * time.Minute, Conns: 64, Pollers: 8,
		PollEvery: time.Second, WSSample: 20, WSEvery: 20, Buyers: 64, PayShare: 0.7, Think: 500 * time.Millisecond}
}

// Schedule is each user's arrival after the start, sorted: a spike
// (exponential with mean arrive/20, capped at arrive) for a spike share
// of them, uniform over arrive for the rest. The same seed gives the same
// schedule.
func Schedule(users int, arrive time.Duration, spike float64, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]time.Duration, users)
	for i := range out {
		if rng.Float64() < spike {
			out[i] = min(arrive, time.Duration(rng.ExpFloat64()*float64(arrive)/20))
		} else {
			out[i] = time.Duration(rng.Float64() * float64(arrive))
		}
	}
	slices.Sort(out)
	return out
}

// sim is one run's state.
type sim struct {
	c     Config
	hc    *fasthttp.Client
	auth  *auth.Authority
	start time.Time
	seats []string
	r     *Report

	seqs       []atomic.Int64 // by user
	bySeq      []atomic.Int32 // user+1 by join sequence
	dispatched []atomic.Bool  // by user: handed to a buyer
	cursor     atomic.Int64   // every sequence up to it was looked at
	served     atomic.Int64   // the highest served seen in a progress document
	soldOut    atomic.Bool
	waiting    atomic.Int64
	joinsDone  atomic.Bool
	busy       atomic.Int64 // users handed to buyers and not finished
	exact      chan int
}

// Run plays the on-sale and returns its report.
func Run(ctx context.Context, c Config) (*Report, error) {
	a, err := auth.New([]byte(c.Secret))
	if err != nil {
		return nil, fmt.Errorf("jwt secret: %w", err)
	}
	conns := c.Conns + c.Pollers + c.Buyers + 8
	s := &sim{c: c, auth: a, r: newReport(c),
		hc: &fasthttp.Client{MaxConnsPerHost: conns, ReadTimeout: 30 * time.Second, WriteTimeout: 10 * time.Second,
			MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true},
		seqs: make([]atomic.Int64, c.Users), bySeq: make([]atomic.Int32, c.Users+1),
		dispatched: make([]atomic.Bool, c.Users), exact: make(chan int, c.Users)}
	s.r.sim = s
	if c.Create {
		if err := s.createEvent(); err != nil {
			return nil, err
		}
	}
	if s.seats, err = s.seatIDs(); err != nil {
		return nil, err
	}
	sched := Schedule(c.Users, c.Arrive, c.Spike, c.Seed)
	before, _ := redisInfo(ctx, c.Redis)

	ctx, cancel := context.WithTimeout(ctx, c.Duration)
	defer cancel()
	s.start = time.Now()
	s.r.start = s.start
	var wg sync.WaitGroup
	var next atomic.Int64
	var joiners sync.WaitGroup
	var sockets atomic.Int64
	for range c.Conns {
		joiners.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= c.Users || ctx.Err() != nil {
					return
				}
				if d := time.Until(s.start.Add(sched[i])); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				if s.join(i) == "queued" && c.Notifier != "" && i%max(1, c.WSEvery) == 0 && sockets.Add(1) <= int64(c.WSSample) {
					wg.Go(func() { s.holdSocket(ctx, i) })
				}
			}
		})
	}
	go func() {
		joiners.Wait()
		s.r.mu.Lock()
		s.r.joinEnd = time.Now()
		s.r.mu.Unlock()
		s.joinsDone.Store(true)
	}()
	for range c.Pollers {
		wg.Go(func() { s.poll(ctx) })
	}
	wg.Go(func() { s.dispatch(ctx) })
	for w := range c.Buyers {
		wg.Go(func() { s.buy(ctx, rand.New(rand.NewPCG(c.Seed+1, uint64(w)))) })
	}
	// The sale is over when every user joined, nobody is being served,
	// and the queue is empty or sold out.
	for ctx.Err() == nil {
		if s.joinsDone.Load() && s.busy.Load() == 0 && len(s.exact) == 0 && s.served.Load() > 0 &&
			(s.soldOut.Load() || (s.waiting.Load() == 0 && s.cursor.Load() >= s.served.Load())) {
			s.r.Finished = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	joiners.Wait()
	wg.Wait()
	s.r.Elapsed = time.Since(s.start)
	after, _ := redisInfo(context.Background(), c.Redis)
	s.r.redis(before, after)
	s.r.Event, _ = s.eventCounts()
	return s.r, nil
}

func (s *sim) token(i int) string {
	t, _ := s.auth.Issue(s.user(i), "", 24*time.Hour)
	return t
}

func (s *sim) user(i int) string {
	return "onsale-" + strconv.FormatUint(s.c.Seed, 10) + "-" + strconv.Itoa(i)
}

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
		"rows": s.c.Rows, "seats_per_row": s.c.PerRow, "capacity": s.c.Capacity, "hold_seconds": s.c.Hold.Seconds()}, nil, &e)
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

// join is user i's POST /api/booking/request; it returns the status
// (queued, active), "" when it failed.
func (s *sim) join(i int) string {
	var j struct {
		Status   string `json:"status"`
		Sequence int64  `json:"sequence"`
		Ticket   string `json:"ticket"`
		Code     string `json:"code"`
	}
	t0 := time.Now()
	code, _, err := s.call("POST", "/api/booking/request", s.token(i), map[string]string{"event_id": s.c.EventID}, nil, &j)
	s.r.Join.add(time.Since(t0))
	if err != nil || code != http.StatusOK {
		s.r.fail("join", code, j.Code, err)
		return ""
	}
	s.r.Joined.Add(1)
	if j.Ticket != "" {
		s.r.Tickets.Add(1)
	}
	s.seqs[i].Store(j.Sequence)
	switch j.Status {
	case "active":
		s.r.JoinedActive.Add(1)
		s.handOver(i)
	case "queued":
		if j.Sequence > 0 && j.Sequence < int64(len(s.bySeq)) {
			s.bySeq[j.Sequence].Store(int32(i + 1))
		}
		// the dispatcher may have passed this sequence before it was known
		if j.Sequence <= s.cursor.Load() {
			s.handOver(i)
		}
	default:
		s.r.fail("join", code, "status "+j.Status, nil)
		return ""
	}
	return j.Status
}

// handOver gives user i to the buyers (once).
func (s *sim) handOver(i int) {
	if s.dispatched[i].CompareAndSwap(false, true) {
		s.busy.Add(1)
		s.exact <- i
	}
}

// poll is one of the waiting crowd's pollers: the progress document,
// revalidated with its ETag.
func (s *sim) poll(ctx context.Context) {
	path := "/api/events/" + url.PathEscape(s.c.EventID) + "/progress"
	etag := ""
	tick := time.NewTicker(s.c.PollEvery)
	defer tick.Stop()
	for {
		var p struct {
			Served  int64 `json:"served"`
			Waiting int64 `json:"waiting"`
			SoldOut bool  `json:"sold_out"`
		}
		hdr := map[string]string{}
		if etag != "" {
			hdr["If-None-Match"] = etag
		}
		t0 := time.Now()
		code, h, err := s.call("GET", path, "", nil, hdr, &p)
		s.r.Progress.add(time.Since(t0))
		switch {
		case err == nil && code == http.StatusOK:
			s.r.ProgressPolls.Add(1)
			etag = h.Get("ETag")
			for {
				cur := s.served.Load()
				if p.Served <= cur || s.served.CompareAndSwap(cur, p.Served) {
					break
				}
			}
			s.waiting.Store(p.Waiting)
			if p.SoldOut {
				s.soldOut.Store(true)
			}
		case err == nil && code == http.StatusNotModified:
			s.r.ProgressPolls.Add(1)
			s.r.Progress304.Add(1)
		default:
			s.r.fail("progress", code, "", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// dispatch hands every user whose sequence the progress document shows
// served to the buyers, who read its exact position: a waiting page does
// the same when its sequence is served.
func (s *sim) dispatch(ctx context.Context) {
	for ctx.Err() == nil {
		served := min(s.served.Load(), int64(len(s.bySeq)-1))
		from := s.cursor.Load() + 1
		s.cursor.Store(served) // before the scan: a join after it sees the cursor
		for q := from; q <= served; q++ {
			if u := s.bySeq[q].Load(); u > 0 {
				s.handOver(int(u - 1))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

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
	case "sold_out":
		s.r.SoldOut.Add(1)
		return
	default: // expired, cancelled, abandoned before anyone got to it
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
	for range 5 {
		seat := s.seats[rng.IntN(len(s.seats))]
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

// holdSocket is a sampled waiting user on the notifier's WebSocket: the
// delay from its admission (the hold's deadline minus the hold) to the
// your_turn message.
func (s *sim) holdSocket(ctx context.Context, i int) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, _, err := websocket.Dial(dctx, s.c.Notifier+"?event_id="+url.QueryEscape(s.c.EventID),
		&websocket.DialOptions{Subprotocols: []string{"boxoffice.v1", "bearer." + s.token(i)}})
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.r.fail("websocket", 0, "", err)
		}
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	s.r.Sockets.Add(1)
	waited := false
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				s.r.fail("websocket", 0, "", err)
			}
			return
		}
		var m messages.Notification
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Type {
		case messages.NotifyPosition:
			waited = true
		case messages.NotifyYourTurn:
			if waited && m.ExpireAtMS > 0 {
				s.r.YourTurn.add(time.Since(time.UnixMilli(m.ExpireAtMS).Add(-s.c.Hold)))
			}
			return
		case messages.NotifySoldOut, messages.NotifyExpired:
			return
		}
	}
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
