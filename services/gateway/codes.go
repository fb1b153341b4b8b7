package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// Access codes (docs/http-api.md "Access codes"): operators generate
// them in bulk for an event or one of its phases and get them once (JSON,
// or CSV to hand to a fan club's mailing); the ledger keeps their
// digests (booking.CodeDigest with CodeKey), Redis the same, and a join
// with {"code"} redeems one in its own script (booking.Store.EnqueueCode).

// MaxCodesPerCall bounds one generation.
const MaxCodesPerCall = 10_000

// CodeOtherEvent is the refusal of a code that belongs to another event.
const CodeOtherEvent = "code_other_event"

// codesRoutes registers the routes of access codes and of the sale's
// phase (they need the ledger, their record).
func (s *Server) codesRoutes(adm *gin.RouterGroup) {
	if s.Ledger == nil {
		return
	}
	adm.POST("/events/:id/codes", s.createCodes)
	adm.GET("/events/:id/codes", s.codeBatches)
	adm.PUT("/events/:id/phase", s.setPhase) // phases.go, these three
	adm.GET("/events/:id/phases", s.phases)
	adm.PUT("/events/:id/phases", s.setSchedule)
}

// createCodesRequest is a generation: how many codes, each with its uses
// (1: single use), its holder's seats per order (0: the event's), the
// phase it opens ("" every phase) and its expiry.
type createCodesRequest struct {
	Count     int     `json:"count"`
	Uses      int     `json:"uses"`
	Seats     int     `json:"seats"`
	Phase     string  `json:"phase"`
	ExpiresAt *string `json:"expires_at"`
}

func (r *createCodesRequest) Validate() error {
	if r.Count < 1 || r.Count > MaxCodesPerCall {
		return errf("count must be from 1 to " + strconv.Itoa(MaxCodesPerCall))
	}
	if r.Uses == 0 {
		r.Uses = 1
	}
	if r.Uses < 1 || r.Uses > booking.MaxCodeUses {
		return errf("uses must be from 1 to " + strconv.Itoa(booking.MaxCodeUses))
	}
	if r.Seats < 0 || r.Seats > booking.MaxSeatsPerOrderLimit {
		return errf("seats must be from 0 (the event's max_seats_per_order) to " + strconv.Itoa(booking.MaxSeatsPerOrderLimit))
	}
	if r.Phase != "" && !ids.Valid(r.Phase) {
		return errf("phase must be a phase id: 1-128 printable ASCII characters without spaces, braces or |")
	}
	if r.ExpiresAt != nil {
		if _, err := time.Parse(time.RFC3339, *r.ExpiresAt); err != nil {
			return errf("expires_at must be RFC 3339 (e.g. 2026-01-02T12:00:00Z)")
		}
	}
	return nil
}

// createCodes: POST /api/admin/events/{id}/codes (operator) {count,
// uses, seats, phase, expires_at}: 201 with the batch and its codes, the
// only time they are shown (the ledger keeps digests); ?format=csv
// answers them as text/csv. Errors: 400 invalid_body, 404
// event_not_found.
func (s *Server) createCodes(c *gin.Context) {
	id, req, ok := adminEventRequest[createCodesRequest](c)
	if !ok {
		return
	}
	if s.CodeKey == nil {
		httpapi.Abort(c, http.StatusServiceUnavailable, httpapi.CodeUnavailable, "access codes are not configured on this gateway")
		return
	}
	csvOut := c.Query("format") == "csv"
	if f := c.Query("format"); f != "" && f != "csv" && f != "json" {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "format must be json or csv")
		return
	}
	b := &ledger.CodeBatch{EventID: id, Phase: req.Phase, Uses: req.Uses, Seats: req.Seats, Actor: principal(c).Account}
	if req.ExpiresAt != nil {
		b.ExpiresAt, _ = time.Parse(time.RFC3339, *req.ExpiresAt)
	}
	codes := make([]string, req.Count)
	digests := make([]string, req.Count)
	for i := range codes {
		codes[i] = booking.NewCode()
		n, _ := booking.NormaliseCode(codes[i])
		digests[i] = booking.CodeDigest(s.CodeKey, n)
	}
	ctx := c.Request.Context()
	err := s.Ledger.AddCodes(ctx, b, digests, func(ctx context.Context, recs []booking.CodeRecord) error {
		return s.Store.LoadCodes(ctx, id, recs)
	})
	if err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return
	}
	if !s.audit(c, operators.ActionCodesCreate, id, "", nil, gin.H{"batch_id": b.ID, "count": b.Count,
		"uses": b.Uses, "seats": b.Seats, "phase": b.Phase}) {
		return
	}
	if csvOut {
		var sb strings.Builder
		w := csv.NewWriter(&sb)
		_ = w.Write([]string{"code", "batch_id", "phase", "uses", "seats", "expires_at"})
		exp := ""
		if !b.ExpiresAt.IsZero() {
			exp = b.ExpiresAt.UTC().Format(time.RFC3339)
		}
		for _, code := range codes {
			_ = w.Write([]string{code, strconv.FormatInt(b.ID, 10), b.Phase, strconv.Itoa(b.Uses), strconv.Itoa(b.Seats), exp})
		}
		w.Flush()
		c.Header("Content-Disposition", `attachment; filename="codes-`+id+`-`+strconv.FormatInt(b.ID, 10)+`.csv"`)
		c.Data(http.StatusCreated, "text/csv; charset=utf-8", []byte(sb.String()))
		return
	}
	c.JSON(http.StatusCreated, gin.H{"batch": b, "codes": codes})
}

// codeBatches: GET /api/admin/events/{id}/codes (viewer): the event's
// batches of codes with their redemptions (never the codes). 404
// event_not_found.
func (s *Server) codeBatches(c *gin.Context) {
	id, bs, ok := ledgerList(s, c, s.Ledger.CodeBatches)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, gin.H{"event_id": id, "batches": bs})
}

// codeJoin is a join with an access code: the code's digest goes to the
// join's script with one limit more (ratelimit.Config.CodeTries), so a
// wrong code costs a try whatever it is. A code the event does not know
// is looked up in the ledger: one of another event is refused as such
// (whoever holds it holds a real code), anything else invalid_code.
func (s *Server) codeJoin(c *fastserver.Ctx, eventID, user, code string, limits ...booking.Limit) (booking.JoinResult, bool) {
	if s.CodeKey == nil {
		c.Abort(http.StatusServiceUnavailable, httpapi.CodeUnavailable, "access codes are not configured on this gateway")
		return booking.JoinResult{}, false
	}
	n, ok := booking.NormaliseCode(code)
	if !ok {
		n = "\x00" + code // no code's digest: refused as unknown, and counted
	}
	digest := booking.CodeDigest(s.CodeKey, n)
	limits = append(limits, s.Limits.CodeTries(s.fastClientIP(c)))
	res, err := s.Store.EnqueueCode(c.Context(), eventID, user, digest, limits...)
	if errors.Is(err, booking.ErrInvalidCode) && s.Ledger != nil && ok {
		if ev, lerr := s.Ledger.CodeEvent(c.Context(), digest); lerr == nil && ev != "" && ev != eventID {
			c.Abort(http.StatusForbidden, CodeOtherEvent, "this access code is for another event")
			return booking.JoinResult{}, false
		}
	}
	if err != nil {
		c.Fail(err)
		return booking.JoinResult{}, false
	}
	return res, true
}

// codeKey is ACCESS_CODE_HMAC_KEY, or a key derived from JWT_SECRET.
func (c Config) codeKey() []byte {
	if c.AccessCodeHMACKey != "" {
		return []byte(c.AccessCodeHMACKey)
	}
	m := hmac.New(sha256.New, []byte(c.JWTSecret))
	m.Write([]byte("boxoffice access code"))
	return m.Sum(nil)
}
