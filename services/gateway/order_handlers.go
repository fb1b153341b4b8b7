package main

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// The ledger's routes (PostgreSQL, pkg/ledger): a user's orders, an
// event's orders and the refunds for an admin, and the operator's restore.
// Join and position never reach here: the waiting room does not touch
// PostgreSQL.
func (s *Server) ledgerRoutes(api, adm *gin.RouterGroup) {
	if s.Ledger == nil {
		return
	}
	o := api.Group("/orders", httpapi.Authenticate(s.Auth))
	o.GET("", s.myOrders)
	o.GET("/:id", s.myOrder)
	o.POST("/:id/cancel", s.cancelMyOrder) // order_cancel.go
	adm.GET("/events/:id/orders", s.eventOrders)
	adm.POST("/events/:id/restore", s.restoreEvent)
	adm.GET("/refunds", s.refundsDue)
	adm.POST("/refunds/:order_id", s.markRefunded)
	adm.POST("/orders/:order_id/cancel", s.cancelOrder)       // order_cancel.go
	adm.POST("/events/:id/box-office/sales", s.boxOfficeSale) // box_office.go
}

// ledgerErr maps the ledger's sentinels to the booking ones the JSON
// error format knows; anything else stays (503: PostgreSQL unavailable).
func ledgerErr(err error) error {
	switch {
	case errors.Is(err, ledger.ErrEventNotFound):
		return booking.ErrEventNotFound
	case errors.Is(err, ledger.ErrEventExists):
		return booking.ErrEventExists
	}
	return err
}

// adminEventRequest reads an admin change's path event id and its JSON body,
// strictly (httpapi.BindStrict): ok false when it has answered (404
// event_not_found for a malformed id, which is an unknown one; 400
// invalid_body, 413, 415).
func adminEventRequest[T any](c *gin.Context) (id string, req T, ok bool) {
	id = c.Param("id")
	if !ids.ValidEvent(id) { // the one event id rule: malformed is unknown
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return "", req, false
	}
	return id, req, httpapi.BindStrict(c, &req, httpapi.MaxBody)
}

// ledgerEventID answers the path's event id when the ledger has the
// event; otherwise it has answered (404 event_not_found, a malformed id
// being unknown; 503 when PostgreSQL is unavailable) and ok is false.
func (s *Server) ledgerEventID(c *gin.Context) (id string, ok bool) {
	id = c.Param("id")
	if !ids.ValidEvent(id) { // the one event id rule: malformed is unknown
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return "", false
	}
	if _, err := s.Ledger.Event(c.Request.Context(), id); err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return "", false
	}
	return id, true
}

// ledgerList reads with read the ledger's list for the event the path
// names (ledgerEventID), never nil (an empty list answers []); ok false
// when it answered an error instead.
func ledgerList[T any](s *Server, c *gin.Context, read func(context.Context, string) ([]T, error)) (id string, list []T, ok bool) {
	if id, ok = s.ledgerEventID(c); !ok {
		return "", nil, false
	}
	list, err := read(c.Request.Context(), id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return "", nil, false
	}
	if list == nil {
		list = []T{}
	}
	return id, list, true
}

// ledgerCreateEvent records the definition before Redis is written. created
// reports a new row (false: the same definition was there, a retry).
func (s *Server) ledgerCreateEvent(c *gin.Context, cfg booking.EventConfig) (created, ok bool) {
	if s.Ledger == nil {
		return false, true
	}
	_, created, err := s.Ledger.CreateEvent(c.Request.Context(), cfg)
	if err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return false, false
	}
	return created, true
}

// ledgerUpdateEvent applies an update to the definition and, in the same
// ledger transaction, to Redis (apply, given the change's settings
// revision for booking.EventUpdate.Revision): both or neither. Without a
// ledger, apply alone (revision 0). false: it has answered the error.
func (s *Server) ledgerUpdateEvent(c *gin.Context, id string, u booking.EventUpdate, apply func(context.Context, int64) error) bool {
	var err error
	if s.Ledger == nil {
		err = apply(c.Request.Context(), 0)
	} else {
		_, err = s.Ledger.UpdateEvent(c.Request.Context(), id, u, apply)
	}
	if se, ok := booking.IsScheduleError(err); ok {
		// the body is valid; the event's saved schedule is in the way
		httpapi.Abort(c, http.StatusConflict, se.Code, se.Msg)
		return false
	}
	if err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return false
	}
	return true
}

// ledgerDrawSeeds records the seeds of the event's pre-queue draws as
// Redis keeps them, after a Store call that may have drawn one (create,
// update of early_join_seconds, schedule), before its commitment is
// published: a rebuild starts with them (ledger.Restorer). A failure
// answers the error (503 when PostgreSQL is down): the operator retries,
// which records them then, as does the reconciliation meanwhile. A seed
// the ledger kept that differs from Redis's is logged: the ledger's is
// the one a rebuild starts with.
func (s *Server) ledgerDrawSeeds(c *gin.Context, id string) bool {
	if s.Ledger == nil {
		return true
	}
	if _, err := s.Ledger.KeepDrawSeeds(c.Request.Context(), s.Store, id, httpapi.Logger(c)); err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return false
	}
	return true
}

// ledgerRecordPayment records an issued payment id before the provider
// hears of it (503 when PostgreSQL is down: the client retries and gets
// the same payment id).
func (s *Server) ledgerRecordPayment(c *gin.Context, eventID, userID string, hold booking.PaymentHold) bool {
	if s.Ledger == nil {
		return true
	}
	amount, cur := s.orderPrice(hold.AmountCents, hold.Currency, len(hold.SeatIDs))
	err := s.Ledger.RecordPayment(c.Request.Context(), ledger.Payment{PaymentID: hold.PaymentID, EventID: eventID,
		UserID: userID, SeatID: hold.SeatID, Sequence: hold.Sequence, Amount: amount, Currency: cur, SeatPrices: hold.SeatPrices})
	if err != nil {
		bookinghttp.Fail(c, err)
		return false
	}
	return true
}

// paymentMoney is the amount and currency of a payment id, as the ledger
// recorded them when it was first issued: the order's price for a new
// payment, the ledger's record for a repeated initiate (the price may have
// changed since; payment_initiated is republished as it was).
func (s *Server) paymentMoney(c *gin.Context, hold booking.PaymentHold) (int64, string, bool) {
	// the order's price: the sum of its seats' section prices
	amount, cur := s.orderPrice(hold.AmountCents, hold.Currency, len(hold.SeatIDs))
	if hold.Created || s.Ledger == nil {
		return amount, cur, true
	}
	p, err := s.Ledger.Payment(c.Request.Context(), hold.PaymentID)
	if errors.Is(err, ledger.ErrPaymentNotFound) {
		return amount, cur, true
	}
	if err != nil {
		bookinghttp.Fail(c, err)
		return 0, "", false
	}
	return p.Amount, p.Currency, true
}

// limitParam reads ?limit= (default def, 1..max).
func limitParam(c *gin.Context, def, max int) (int, bool) {
	n, err := parseLimit(c.Query("limit"), def, max)
	if err != nil {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
		return 0, false
	}
	return n, true
}

// parseLimit parses a ?limit= value: def when empty, else an integer
// from 1 to most.
func parseLimit(v string, def, most int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, errf("limit must be an integer from 1 to " + strconv.Itoa(most))
	}
	return n, nil
}

// myOrders: GET /api/orders — the caller's orders, newest first.
func (s *Server) myOrders(c *gin.Context) {
	n, ok := limitParam(c, 100, 1000)
	if !ok {
		return
	}
	orders, err := s.Ledger.UserOrders(c.Request.Context(), httpapi.Identity(c).UserID, n)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	for i := range orders {
		fanView(&orders[i])
	}
	c.JSON(http.StatusOK, gin.H{"orders": orders})
}

// myOrder: GET /api/orders/{id} — one of the caller's orders; someone
// else's is a 404 like a missing one.
func (s *Server) myOrder(c *gin.Context) {
	id := c.Param("id")
	if !ids.Valid(id) {
		httpapi.Abort(c, http.StatusNotFound, "order_not_found", ledger.ErrOrderNotFound.Error())
		return
	}
	o, err := s.Ledger.UserOrder(c.Request.Context(), httpapi.Identity(c).UserID, id)
	if errors.Is(err, ledger.ErrOrderNotFound) {
		httpapi.Abort(c, http.StatusNotFound, "order_not_found", err.Error())
		return
	}
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	fanView(&o)
	c.JSON(http.StatusOK, o)
}

// fanView leaves out of a fan's order what only operators see: who
// cancelled it.
func fanView(o *ledger.Order) {
	for i := range o.Cancellations {
		o.Cancellations[i].Actor = ""
	}
}

// csvHeader is the first line of GET /api/admin/events/{id}/orders?format=csv.
var csvHeader = []string{"order_id", "payment_id", "event_id", "user_id", "seat_id", "sequence", "amount", "currency",
	"status", "refund_reason", "created_at", "updated_at", "refunded_at"}

// eventOrders: GET /api/admin/events/{id}/orders[?format=csv] — every
// order of an event, oldest first.
func (s *Server) eventOrders(c *gin.Context) {
	format := c.DefaultQuery("format", "json")
	if format != "json" && format != "csv" {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, `format must be "json" or "csv"`)
		return
	}
	id, ok := s.ledgerEventID(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	orders, err := s.Ledger.EventOrders(ctx, id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if format == "json" {
		c.JSON(http.StatusOK, gin.H{"event_id": id, "orders": orders})
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="orders-`+id+`.csv"`)
	c.Status(http.StatusOK)
	if err := writeOrdersCSV(c.Writer, orders); err != nil {
		// the status is sent: a cut file must not pass for the whole, so
		// the connection is closed without the rest (net/http's abort)
		httpapi.Logger(c).Warn("orders CSV export failed", zap.String("event_id", id), zap.Error(err))
		panic(http.ErrAbortHandler)
	}
}

// writeOrdersCSV writes orders as CSV (csvHeader, then a line each) and
// returns the first error of writing them.
func writeOrdersCSV(out io.Writer, orders []ledger.Order) error {
	w := csv.NewWriter(out)
	if err := w.Write(csvHeader); err != nil {
		return err
	}
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	for _, o := range orders {
		refunded := ""
		if o.RefundedAt != nil {
			refunded = ts(*o.RefundedAt)
		}
		if err := w.Write([]string{o.OrderID, o.PaymentID, o.EventID, o.UserID, o.SeatID, strconv.FormatInt(o.Sequence, 10),
			strconv.FormatInt(o.Amount, 10), o.Currency, o.Status, o.RefundReason, ts(o.CreatedAt), ts(o.UpdatedAt), refunded}); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// refundsDue: GET /api/admin/refunds — orders due for a refund, oldest first.
func (s *Server) refundsDue(c *gin.Context) {
	n, ok := limitParam(c, 100, 1000)
	if !ok {
		return
	}
	orders, err := s.Ledger.RefundsDue(c.Request.Context(), n)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"refunds": orders})
}

// markRefunded: POST /api/admin/refunds/{order_id} — refund a refund_due
// order with the payment provider (idempotent by payment id), then record
// it as refunded. Again on a refunded order: 200, nothing changes.
func (s *Server) markRefunded(c *gin.Context) {
	id := c.Param("order_id")
	if !ids.Valid(id) { // a NUL byte would fail PostgreSQL's text: unknown, not 503
		httpapi.Abort(c, http.StatusNotFound, "order_not_found", ledger.ErrOrderNotFound.Error())
		return
	}
	ctx := c.Request.Context()
	o, err := s.Ledger.Order(ctx, id)
	if errors.Is(err, ledger.ErrOrderNotFound) {
		httpapi.Abort(c, http.StatusNotFound, "order_not_found", err.Error())
		return
	}
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	switch o.Status {
	case ledger.StatusRefunded:
		noChange(c) // a repeat: the first call was recorded
		c.JSON(http.StatusOK, o)
		return
	case ledger.StatusCompleted:
		httpapi.Abort(c, http.StatusConflict, "not_refundable",
			"the order is a sold ticket, not a refund due: cancel it (POST /api/admin/orders/{order_id}/cancel)")
		return
	case ledger.StatusCancelled:
		httpapi.Abort(c, http.StatusConflict, "not_refundable", "the order was cancelled: its refunds are its cancellations'")
		return
	}
	// a box-office sale's money is at the counter: no provider to ask
	counter := booking.IsBoxOfficePayment(o.PaymentID)
	if s.Refunds == nil && !counter {
		httpapi.Abort(c, http.StatusServiceUnavailable, "payment_provider_unavailable", "no payment provider for refunds is configured")
		return
	}
	if !counter {
		if _, err := s.Refunds.Refund(ctx, o.PaymentID, o.Amount, ""); err != nil {
			httpapi.Logger(c).Warn("refund failed", zap.String("order_id", id), zap.String("payment_id", o.PaymentID), zap.Error(err))
			httpapi.Abort(c, http.StatusServiceUnavailable, "payment_provider_unavailable",
				"the payment provider did not confirm the refund; retry (refunds are idempotent)")
			return
		}
	}
	prev := o
	o, err = s.Ledger.MarkRefunded(ctx, id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if !s.audit(c, operators.ActionOrderRefund, o.EventID, o.OrderID,
		gin.H{"status": prev.Status, "amount": prev.Amount, "currency": prev.Currency, "payment_id": prev.PaymentID},
		gin.H{"status": o.Status, "amount": o.Amount, "currency": o.Currency, "payment_id": o.PaymentID, "refunded_at": o.RefundedAt}) {
		return
	}
	c.JSON(http.StatusOK, o)
}

// restoreEvent: POST /api/admin/events/{id}/restore — rebuild the event's
// Redis state from the ledger now (what the safety net does within one
// interval). 409 event_exists when Redis has the event.
func (s *Server) restoreEvent(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) { // the one event id rule: malformed is unknown
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	r := &ledger.Restorer{Ledger: s.Ledger, Store: s.Store, Kafka: s.Kafka, Log: s.Log}
	res, err := r.Restore(c.Request.Context(), id)
	if err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return
	}
	out := gin.H{"event_id": id, "seats": res.Total, "sold": res.Sold, "skipped": res.Skipped, "sequence_base": res.SeqBase}
	if !s.audit(c, operators.ActionEventRestore, id, "", nil,
		gin.H{"seats": res.Total, "sold": res.Sold, "skipped": res.Skipped, "sequence_base": res.SeqBase}) {
		return
	}
	c.JSON(http.StatusOK, out)
}
