package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/report"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// The console's live view (GET /api/admin/events/{id}/live,
// docs/operators.md): one document per event with what an operator
// watches during an on-sale, as JSON, or as a stream of Server-Sent
// Events (Accept: text/event-stream) with a new document every
// liveInterval.
//
// Its cost does not grow with viewers: each gateway keeps one live
// snapshot per event (snapshot.go), read at most once per liveInterval
// with one Store.GetEvent (the live counts) and one report.Read (the
// report consumer's revenue and payment counts) however many operators
// watch; every stream of that event sends the same bytes.
//
// The route is served natively on fasthttp (the gin engine buffers whole
// answers, so it cannot stream): it checks the caller as the admin door
// does (operator_auth.go; any role may read it) without extending the
// session's idle time, and checks again every liveRecheck while it
// streams, so signing out, a revoked session or token, or a disabled
// account ends the stream within that time.

const (
	// liveInterval is how often a stream sends a document, and how old a
	// live snapshot may be.
	liveInterval = time.Second
	// liveMaxStream ends a stream after this long; EventSource connects
	// again at once (and the caller is checked anew).
	liveMaxStream = 10 * time.Minute
)

// liveRecheck is how often a stream checks that its caller may still
// read it (a variable for the tests).
var liveRecheck = 15 * time.Second

// liveDoc is the body of GET /api/admin/events/{id}/live and of each
// event of its stream.
type liveDoc struct {
	EventID string `json:"event_id"`
	Name    string `json:"name"`
	// At is when the figures were read (RFC 3339, UTC).
	At      string `json:"at"`
	Paused  bool   `json:"paused"`
	SoldOut bool   `json:"sold_out"`
	// The settings the console's controls change.
	Capacity       int     `json:"capacity"`
	AdmitPerMinute int     `json:"admit_per_minute"`
	HoldSeconds    float64 `json:"hold_seconds"`
	SalesStart     string  `json:"sales_start,omitempty"`
	SalesEnd       string  `json:"sales_end,omitempty"`
	Challenge      string  `json:"challenge"`
	// The queue: waiting (pre-queue included), in the room (holding a
	// turn), admitted in the last 60 s, the highest join sequence let in,
	// and the joins into the pre-queue (with a later phase's open one).
	Waiting            int64 `json:"waiting"`
	Prequeued          int64 `json:"prequeued"`
	InRoom             int64 `json:"in_room"`
	AdmittedLastMinute int64 `json:"admitted_last_minute"`
	Served             int64 `json:"served"`
	// Seats: Held are in fans' carts; Reserved and Killed are the seats
	// operators hold for a purpose or took off sale (seat_marks.go).
	Seats struct {
		Total     int64 `json:"total"`
		Available int64 `json:"available"`
		Held      int64 `json:"held"`
		Sold      int64 `json:"sold"`
		Reserved  int64 `json:"reserved"`
		Killed    int64 `json:"killed"`
	} `json:"seats"`
	// Provider is the payment provider as this event's hold clocks see
	// it: degraded since the declaration stopped them (provider.go).
	Provider struct {
		Degraded bool   `json:"degraded"`
		Since    string `json:"since,omitempty"`
	} `json:"provider"`
	// Revenue and refunds per currency in minor units, and the payments,
	// as the report consumer has counted them (a few seconds behind).
	Revenue  map[string]int64 `json:"revenue"`
	Refunds  map[string]int64 `json:"refunds"`
	Payments struct {
		Started   int64 `json:"started"`
		Completed int64 `json:"completed"`
		Failed    int64 `json:"failed"`
		Late      int64 `json:"late"`
	} `json:"payments"`
	// Cancellations of sold orders and the refunds the provider confirmed
	// for them (order_cancelled, refund_issued), as the report consumer
	// counted them: the difference is refunds still pending.
	Cancellations struct {
		Cancelled int64 `json:"cancelled"`
		Refunded  int64 `json:"refunded"`
	} `json:"cancellations"`
	// AdmissionsPerMinute is the report consumer's admissions of each
	// minute of the last hour that had any, oldest first.
	AdmissionsPerMinute []report.Minute `json:"admissions_per_minute"`
	// Webhooks are the payment webhooks payment-webhook refused or failed
	// (every event's: a refused one may name none),
	// booking.Store.RecordWebhookRefusal.
	Webhooks booking.WebhookRefusals `json:"webhooks"`
}

// liveHistory is how far back the live document's admissions per minute
// go.
const liveHistory = time.Hour

func liveOf(e booking.Event, r report.Report, at time.Time) liveDoc {
	c := e.Counts
	d := liveDoc{EventID: e.ID, Name: e.Name, At: at.UTC().Format(time.RFC3339), Paused: e.Paused,
		SoldOut: c.Total > 0 && c.Sold >= c.Total, Capacity: e.Capacity, AdmitPerMinute: e.AdmitPerMinute,
		HoldSeconds: e.Hold.Seconds(), SalesStart: rfc3339OrEmpty(e.SalesStart), SalesEnd: rfc3339OrEmpty(e.SalesEnd),
		Challenge: e.Challenge, Waiting: c.Waiting, Prequeued: e.Prequeued + e.PhasePrequeued, InRoom: c.Active,
		AdmittedLastMinute: c.AdmittedLastMinute, Served: c.Served, Revenue: r.Revenue, Refunds: r.Refunds}
	d.Seats.Total, d.Seats.Available, d.Seats.Held, d.Seats.Sold = c.Total, c.Available, c.Held, c.Sold
	d.Seats.Reserved, d.Seats.Killed = c.Reserved, c.Killed
	d.Provider.Degraded, d.Provider.Since = !e.HoldsPausedSince.IsZero(), rfc3339OrEmpty(e.HoldsPausedSince)
	d.Cancellations.Cancelled, d.Cancellations.Refunded = r.Counts[events.TopicOrderCancelled], r.Counts[events.TopicRefundIssued]
	d.AdmissionsPerMinute = []report.Minute{}
	from := at.Add(-liveHistory).Truncate(time.Minute)
	for _, m := range r.AdmissionsPerMinute {
		if !m.Minute.Before(from) {
			d.AdmissionsPerMinute = append(d.AdmissionsPerMinute, m)
		}
	}
	d.Payments.Started, d.Payments.Completed = r.Counts["payment_initiated"], r.Counts["booking_completed"]
	d.Payments.Failed, d.Payments.Late = r.Counts["payment_failed"], r.Counts["payment_late"]
	if d.Revenue == nil {
		d.Revenue = map[string]int64{}
	}
	if d.Refunds == nil {
		d.Refunds = map[string]int64{}
	}
	d.Webhooks.ByOutcome = map[string]int64{}
	return d
}

// liveSnapshot is eventID's live document, read at most once per
// liveInterval per gateway.
func (s *Server) liveSnapshot(ctx context.Context, eventID string) (*snapshot[struct{}], error) {
	return s.liveDocs.get(ctx, eventID, liveInterval, func(ctx context.Context, _ *snapshot[struct{}]) (*snapshot[struct{}], error) {
		start := time.Now()
		e, err := s.Store.GetEvent(ctx, eventID)
		if err != nil {
			return nil, err
		}
		r, err := report.Read(ctx, s.Redis, s.Prefix, eventID)
		if err != nil {
			return nil, err
		}
		d := liveOf(e, r, start)
		if d.Webhooks, err = s.Store.WebhookRefusals(ctx); err != nil {
			return nil, err
		}
		body, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		return newSnapshot(start, body, struct{}{}), nil
	})
}

// credentials are what identifies a fasthttp request's caller, copied out
// of its header (fasthttp reuses the header's buffers once the handler
// returns, and a stream checks them again later).
type credentials struct {
	bearer, cookie string
}

func credentialsOf(h *fasthttp.RequestHeader, cookieName string) credentials {
	cr := credentials{bearer: auth.BearerToken(string(h.Peek("Authorization")))}
	if cookieName != "" {
		cr.cookie = string(h.Cookie(cookieName))
	}
	return cr
}

// errNotSignedIn and errNotAdmin are the refusals of fastPrincipal.
var (
	errNotSignedIn = errors.New("sign in (POST /api/admin/sign-in), or send Authorization: Bearer <API token>")
	errNotAdmin    = errors.New("the admin role is required")
)

// fastPrincipal is the caller of cr as the admin door (caller,
// operator_auth.go) finds it: an API token, a bearer JWT with the admin
// role (unless ADMIN_JWT=false), or a session cookie, looked at without
// extending the session. errNotSignedIn and errNotAdmin are its refusals;
// any other error is PostgreSQL's.
func (s *Server) fastPrincipal(ctx context.Context, cr credentials) (operators.Principal, error) {
	if cr.bearer != "" {
		if operators.IsToken(cr.bearer) {
			if s.Operators == nil {
				return operators.Principal{}, errNotSignedIn
			}
			p, err := s.Operators.VerifyToken(ctx, cr.bearer)
			if errors.Is(err, operators.ErrNotFound) {
				return operators.Principal{}, errNotSignedIn
			}
			return p, err
		}
		if s.NoAdminJWT {
			return operators.Principal{}, errNotSignedIn
		}
		id, err := s.Auth.Verify(cr.bearer)
		if err != nil {
			return operators.Principal{}, errNotSignedIn
		}
		if !id.Admin() {
			return operators.Principal{}, errNotAdmin
		}
		return operators.Principal{Account: "jwt:" + id.UserID, Role: operators.Admin, Via: operators.ViaJWT}, nil
	}
	if s.Sessions == nil || cr.cookie == "" {
		return operators.Principal{}, errNotSignedIn
	}
	p, ok, err := s.Sessions.Peek(ctx, cr.cookie)
	if err != nil {
		return operators.Principal{}, err
	}
	if !ok {
		return operators.Principal{}, errNotSignedIn
	}
	return p, nil
}

// fastAuthorize answers 401 or 403 unless the caller of c may read the
// admin API (any role); false when it answered.
func (s *Server) fastAuthorize(c *fastserver.Ctx, cr credentials) bool {
	p, err := s.fastPrincipal(c.Context(), cr)
	switch {
	case errors.Is(err, errNotSignedIn):
		c.Response.Header.Set("WWW-Authenticate", `Bearer realm="boxoffice"`)
		c.Abort(http.StatusUnauthorized, httpapi.CodeUnauthorized, err.Error())
		return false
	case errors.Is(err, errNotAdmin):
		c.Abort(http.StatusForbidden, httpapi.CodeForbidden, err.Error())
		return false
	case err != nil:
		c.Fail(err)
		return false
	case !p.Role.Allows(operators.Viewer):
		c.Abort(http.StatusForbidden, httpapi.CodeForbidden, "the viewer role is required")
		return false
	}
	return true
}

// eventLive: GET /api/admin/events/{id}/live — the live document as JSON,
// or with Accept: text/event-stream a stream of it.
func (s *Server) eventLive(c *fastserver.Ctx) {
	cookieName := ""
	if s.Sessions != nil {
		cookieName = s.Sessions.CookieName()
	}
	cr := credentialsOf(&c.Request.Header, cookieName)
	if !s.fastAuthorize(c, cr) {
		return
	}
	id := c.Param()
	if !ids.ValidEvent(id) { // the one event id rule: malformed is unknown
		c.Fail(booking.ErrEventNotFound)
		return
	}
	snap, err := s.liveSnapshot(c.Context(), id)
	if err != nil {
		c.Fail(err)
		return
	}
	if !strings.Contains(c.Header("Accept"), "text/event-stream") {
		c.Response.Header.Set("Cache-Control", "no-store")
		c.WriteJSON(http.StatusOK, snap.doc.Body)
		return
	}
	c.Response.Header.Set("Content-Type", "text/event-stream; charset=utf-8")
	c.Response.Header.Set("Cache-Control", "no-store")
	c.Response.Header.Set("X-Accel-Buffering", "no") // a proxy must pass each event on at once
	c.SetStatusCode(http.StatusOK)
	ctx, shutdown := c.Context(), c.Done() // the writer must not touch c
	c.SetBodyStreamWriter(func(w *bufio.Writer) {
		s.streamLive(ctx, w, id, cr, snap.doc.Body, shutdown)
	})
}

// streamLive writes eventID's live document as an SSE "data" event every
// liveInterval (first the one already read) until the client goes away,
// the gateway shuts down, liveMaxStream passes, or the caller may no
// longer read it: then an event "signed_out" ends the stream.
func (s *Server) streamLive(ctx context.Context, w *bufio.Writer, eventID string, cr credentials, first []byte, shutdown <-chan struct{}) {
	send := func(event string, data []byte) bool {
		if event != "" {
			_, _ = w.WriteString("event: " + event + "\n")
		}
		_, _ = w.WriteString("data: ")
		_, _ = w.Write(data)
		_, _ = w.WriteString("\n\n")
		return w.Flush() == nil
	}
	// a reconnecting EventSource waits this long
	_, _ = w.WriteString("retry: 2000\n")
	if !send("", first) {
		return
	}
	tick := time.NewTicker(liveInterval)
	defer tick.Stop()
	start, checked := time.Now(), time.Now()
	for {
		select {
		case <-shutdown:
			return
		case <-tick.C:
		}
		now := time.Now()
		if now.Sub(start) >= liveMaxStream {
			return
		}
		if now.Sub(checked) >= liveRecheck {
			checked = now
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := s.fastPrincipal(cctx, cr)
			cancel()
			if errors.Is(err, errNotSignedIn) || errors.Is(err, errNotAdmin) {
				send("signed_out", []byte(`{}`))
				return
			}
		}
		snap, err := s.liveSnapshot(ctx, eventID)
		if err != nil {
			msg, _ := json.Marshal(map[string]string{"message": liveError(err)})
			if !send("problem", msg) {
				return
			}
			continue
		}
		if !send("", snap.doc.Body) {
			return
		}
	}
}

// liveError is what a stream tells the page when a refresh failed.
func liveError(err error) string {
	if errors.Is(err, booking.ErrEventNotFound) {
		return "the event no longer exists"
	}
	return "the figures could not be read; retrying"
}
