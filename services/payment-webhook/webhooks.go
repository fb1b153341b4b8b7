package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/promx"
)

// announcer publishes RabbitMQ messages with confirms (*admission.Announcer).
type announcer interface {
	ReleaseSlot(ctx context.Context, eventID, reason, dedupe string) error
	Notify(ctx context.Context, n messages.Notification) error
	AnnounceWaitlist(ctx context.Context, eventID string) error
}

// producer writes Kafka events with acks=all (*events.KafkaProducer).
type producer interface {
	Publish(ctx context.Context, evs ...events.Event) error
}

// Webhooks handles the provider's payment webhooks.
type Webhooks struct {
	Store     *booking.Store
	Announcer announcer
	Kafka     producer
	Secret    []byte
	Tolerance time.Duration // default payment.DefaultTolerance
	Now       func() time.Time
	Log       *zap.Logger
	Metrics   *httpapi.Metrics
	// Outcomes counts webhooks by kind and outcome (NewOutcomes); optional.
	Outcomes *prometheus.CounterVec
	// Ledger records orders and payment outcomes (ledger.go); nil only in
	// tests of the Redis path.
	Ledger recorder
}

// NewOutcomes registers boxoffice_webhook_outcomes_total{kind, outcome}:
// kind success|failure; outcome completed, failed, duplicate, no_hold,
// late (refund), bad_signature, invalid_body, status_mismatch (the signed
// status contradicts the path), rejected (other 4xx), error (5xx: the
// provider retries).
func NewOutcomes(reg prometheus.Registerer) *prometheus.CounterVec {
	return promx.New(reg, "webhook").CounterVec("outcomes_total", "Payment webhooks handled, by kind and outcome.", "kind", "outcome")
}

// outcomeKey is the gin context key where a handler names its outcome.
const outcomeKey = "webhook_outcome"

func (w *Webhooks) count(kind, outcome string) {
	if w.Outcomes != nil {
		w.Outcomes.WithLabelValues(kind, outcome).Inc()
	}
}

// DefaultFailureReason is used when a failure webhook gives none.
const DefaultFailureReason = "declined"

// Handler returns the routes.
func (w *Webhooks) Handler() http.Handler {
	if w.Log == nil {
		w.Log = zap.NewNop()
	}
	r := httpapi.New(w.Log, w.Metrics)
	r.POST(payment.PathSuccess, w.verified(payment.StatusSuccess, w.success))
	r.POST(payment.PathFailure, w.verified(payment.StatusFailure, w.failure))
	return r
}

func (w *Webhooks) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// verified reads the raw body, checks its signature (401 otherwise) and
// only then decodes it (400 when malformed); it counts every outcome, and
// records each answer other than 2xx where the console reads it
// (booking.Store.RecordWebhookRefusal).
func (w *Webhooks) verified(kind string, h func(*gin.Context, payment.Webhook)) gin.HandlerFunc {
	return func(c *gin.Context) {
		ew := &errorWriter{ResponseWriter: c.Writer}
		c.Writer = ew
		outcome := ""
		defer func() {
			if outcome == "" {
				return // a panic: the recovery answers and logs it
			}
			w.count(kind, outcome)
			if st := ew.Status(); st >= 400 {
				w.refused(c, kind, outcome, st, ew.message())
			}
		}()
		body, ok := httpapi.ReadBody(c)
		if !ok {
			outcome = "invalid_body"
			return
		}
		tol := w.Tolerance
		if tol <= 0 {
			tol = payment.DefaultTolerance
		}
		if err := payment.Verify(w.Secret, c.GetHeader(payment.SignatureHeader), body, w.now(), tol); err != nil {
			httpapi.Logger(c).Warn("webhook rejected", zap.Error(err), zap.String("remote", c.ClientIP()))
			httpapi.Abort(c, http.StatusUnauthorized, "invalid_signature", err.Error())
			outcome = "bad_signature"
			return
		}
		var wh payment.Webhook
		if err := httpapi.DecodeJSON(body, &wh); err != nil {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidBody, err.Error())
			outcome = "invalid_body"
			return
		}
		if err := wh.CheckStatus(kind); err != nil {
			code := "status_mismatch"
			if errors.Is(err, payment.ErrNoStatus) {
				code = httpapi.CodeInvalidBody
			}
			httpapi.Abort(c, http.StatusBadRequest, code, err.Error())
			outcome = code
			return
		}
		if len(wh.Reason) > 200 {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidBody, "reason must be at most 200 characters")
			outcome = "invalid_body"
			return
		}
		if field := nulField(wh); field != "" {
			// the ledger's text columns cannot hold it: refused before
			// anything is written, not a 503 the provider retries for ever
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, field+" must not contain a NUL byte")
			outcome = "rejected"
			return
		}
		h(c, wh)
		outcome = c.GetString(outcomeKey)
		switch st := c.Writer.Status(); {
		case st >= 500:
			outcome = "error"
		case st >= 400:
			outcome = "rejected"
		case outcome == "":
			outcome = "ok"
		}
	}
}

// refused records a webhook answered with an error for the console
// (every event's errors panel); a failure to record is logged only.
func (w *Webhooks) refused(c *gin.Context, kind, outcome string, status int, msg string) {
	if w.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 2*time.Second)
	defer cancel()
	if err := w.Store.RecordWebhookRefusal(ctx, kind, outcome, status, msg); err != nil {
		httpapi.Logger(c).Warn("webhook refusal not recorded", zap.String("outcome", outcome), zap.Error(err))
	}
}

// errorWriter keeps the start of an error answer's body, for its message.
type errorWriter struct {
	gin.ResponseWriter
	body []byte
}

func (e *errorWriter) Write(b []byte) (int, error) {
	if e.Status() >= 400 && len(e.body) < 4096 {
		e.body = append(e.body, b[:min(len(b), 4096-len(e.body))]...)
	}
	return e.ResponseWriter.Write(b)
}

// message is the error answer's message (the JSON error format's).
func (e *errorWriter) message() string {
	var out struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(e.body, &out)
	return out.Message
}

// success: the booking completes; a late payment is reported for refund.
func (w *Webhooks) success(c *gin.Context, wh payment.Webhook) {
	ctx := c.Request.Context()
	log := httpapi.Logger(c).With(zap.String("event_id", wh.EventID), zap.String("user_id", wh.UserID), zap.String("payment_id", wh.PaymentID))
	res, err := w.Store.PaymentSuccess(ctx, wh.EventID, wh.UserID, wh.PaymentID)
	if late := (*booking.LatePaymentError)(nil); errors.As(err, &late) {
		res = late.Payment // the hold it paid for: what the refund records
	}
	now := w.now()
	refund := ledger.RefundLate
	if errors.Is(err, booking.ErrNotFound) || errors.Is(err, booking.ErrEventNotFound) || errors.Is(err, booking.ErrPaymentMismatch) {
		// Redis lost the booking: a payment id the ledger issued is a refund
		if known, kerr := w.knownPayment(ctx, wh); kerr != nil {
			bookinghttp.Fail(c, kerr)
			return
		} else if known {
			log.Warn("payment for a booking Redis does not have (state lost); recorded for refund")
			err, refund = booking.ErrLatePayment, ledger.RefundNoBooking
		}
	}
	if errors.Is(err, booking.ErrLatePayment) {
		seat := res.SeatID
		if seat == "" {
			seat = wh.SeatID
		}
		if !res.At.IsZero() {
			now = res.At // a repeat republishes the same fact
		}
		order, err := w.recordSale(ctx, wh, seat, res.SeatPrices, res.Sequence, refund, res.Phase, now, time.Time{})
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		// payment_late, as the ledger fixed it with the order
		if err := w.publishOrder(ctx, log, order); err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		log.Warn("late payment: hold already released; published for refund")
		c.Set(outcomeKey, "late")
		c.JSON(http.StatusOK, gin.H{"success": true, "outcome": "refund", "refund": true,
			"message": "the hold was released before the payment arrived; the payment must be refunded"})
		return
	}
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if wh.SeatID != "" && wh.SeatID != res.SeatID {
		log.Warn("webhook seat_id differs from the held seat; the held seat was sold",
			zap.String("webhook_seat", wh.SeatID), zap.String("seat_id", res.SeatID))
	}
	// Completed or a duplicate: publish (again). A duplicate may be the
	// provider's retry of a call whose publishes failed after Redis was
	// written, so the effects are repeated; their ids are the same.
	// The order goes to the ledger first (idempotent: a duplicate may be
	// the retry of a call that failed there), with its facts' time and
	// the event_sold_out its sale caused; then its facts, as the ledger
	// fixed them with the order (the phase of the sale, however the phase
	// changed since): a repeat, or the sweep after a Kafka outage that
	// outlasted the provider's retries, publishes the same.
	if !res.At.IsZero() {
		now = res.At // when it completed
	}
	order, err := w.recordSale(ctx, wh, res.SeatID, res.SeatPrices, res.Sequence, "", res.Phase, now, res.SoldOutAt)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if err := w.publishOrder(ctx, log, order); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if !res.SoldOutAt.IsZero() && order.SoldOutAt == nil {
		// a completion after the last seat's republishes it as it was
		if err := w.Kafka.Publish(ctx, events.EventSoldOut(wh.EventID, res.SoldOutAt)); err != nil {
			bookinghttp.Fail(c, err)
			return
		}
	}
	seq := itoa(res.Sequence)
	if err := w.Announcer.ReleaseSlot(ctx, wh.EventID, messages.ReasonPaymentSuccess, wh.UserID+"|"+seq); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if err := w.Announcer.Notify(ctx, messages.Notification{Type: messages.NotifyBookingCompleted, EventID: wh.EventID,
		UserID: wh.UserID, Sequence: res.Sequence, SeatID: res.SeatID, PaymentID: wh.PaymentID, Timestamp: now.Unix()}); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	log.Info("payment success", zap.String("outcome", string(res.Outcome)), zap.String("seat_id", res.SeatID))
	c.Set(outcomeKey, string(res.Outcome))
	c.JSON(http.StatusOK, gin.H{"success": true, "outcome": res.Outcome, "seat_id": res.SeatID, "seat_ids": res.SeatIDs})
}

// failure: the hold is released.
func (w *Webhooks) failure(c *gin.Context, wh payment.Webhook) {
	ctx := c.Request.Context()
	res, err := w.Store.PaymentFailure(ctx, wh.EventID, wh.UserID, wh.PaymentID)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	log := httpapi.Logger(c).With(zap.String("event_id", wh.EventID), zap.String("user_id", wh.UserID), zap.String("payment_id", wh.PaymentID))
	// The failure goes to the ledger first (idempotent: a repeat may be
	// the retry of a call that failed there), with its fact when it
	// released a hold: its time (when Redis released it, the same for a
	// repeat) and its reason; then the fact, as the ledger fixed it with
	// the first failure: a repeat, or the sweep after a Kafka outage that
	// outlasted the provider's retries, publishes the same.
	var at time.Time
	if res.Outcome != booking.OutcomeNoHold {
		at = w.now()
		if !res.At.IsZero() {
			at = res.At
		}
	}
	pay, err := w.recordFailure(ctx, wh, res.SeatID, res.Sequence, failureReason(wh.Reason), at)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	c.Set(outcomeKey, string(res.Outcome))
	if res.Outcome == booking.OutcomeNoHold {
		// The hold had already ended (expired): nothing to release.
		c.JSON(http.StatusOK, gin.H{"success": true, "outcome": res.Outcome})
		return
	}
	if err := w.publishFailure(ctx, log, pay); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	reason, now := pay.Reason, *pay.FailedAt
	if err := w.Announcer.ReleaseSlot(ctx, wh.EventID, messages.ReasonPaymentFailure, wh.UserID+"|"+itoa(res.Sequence)); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	// the freed seats were offered to the waitlist in the same step
	if err := w.Announcer.AnnounceWaitlist(ctx, wh.EventID); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if err := w.Announcer.Notify(ctx, messages.Notification{Type: messages.NotifyPaymentFailed, EventID: wh.EventID,
		UserID: wh.UserID, Sequence: res.Sequence, SeatID: res.SeatID, PaymentID: wh.PaymentID, Reason: reason,
		Timestamp: now.Unix()}); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	log.Info("payment failure", zap.String("outcome", string(res.Outcome)), zap.String("reason", reason))
	c.JSON(http.StatusOK, gin.H{"success": true, "outcome": res.Outcome, "seat_id": res.SeatID, "seat_ids": res.SeatIDs})
}

// nulField names the first of the webhook's free-text fields that reach
// the ledger (reason, seat_id) holding a NUL byte; "" when none does. The
// ids the booking engine reads are checked there (ids.Valid).
func nulField(wh payment.Webhook) string {
	switch {
	case strings.IndexByte(wh.Reason, 0) >= 0:
		return "reason"
	case strings.IndexByte(wh.SeatID, 0) >= 0:
		return "seat_id"
	}
	return ""
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
