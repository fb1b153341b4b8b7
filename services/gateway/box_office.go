package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// Box-office sales (docs/operators.md "Selling at the box office"): an
// operator sells seats to a walk-up customer, paid at the counter, through
// the same engine as a fan (booking.Store.SellAtBoxOffice: one Lua step)
// and the same ledger (the order with its channel, the operator and the
// customer's reference, before the 2xx), then the booking_completed fact
// with the channel. The sale id (Idempotency-Key or sale_id) makes a
// retry sell nothing more: the ledger's order, once there, is the answer.

// maxCustomerRef bounds a box-office sale's customer reference.
const maxCustomerRef = 100

type boxOfficeSaleRequest struct {
	SaleID      string   `json:"sale_id"`
	SeatIDs     []string `json:"seat_ids"`
	Count       int      `json:"count"`
	Section     string   `json:"section"`
	Channel     string   `json:"channel"`
	CustomerRef string   `json:"customer_ref"`
}

func (r boxOfficeSaleRequest) Validate() error {
	switch {
	case len(r.SeatIDs) == 0 && r.Count == 0:
		return errf("give seat_ids or count")
	case len(r.SeatIDs) > 0 && r.Count != 0:
		return errf("give seat_ids or count, not both")
	case r.Count < 0:
		return errf("count must be at least 1")
	case r.Count > booking.MaxSeatsPerOrderLimit:
		return errf(fmt.Sprintf("count must be at most %d", booking.MaxSeatsPerOrderLimit))
	case len(r.SeatIDs) > booking.MaxSeatsPerOrderLimit:
		return errf(fmt.Sprintf("seat_ids must list at most %d seats", booking.MaxSeatsPerOrderLimit))
	case len(r.Section) > booking.MaxSectionNameLen:
		return errf(fmt.Sprintf("section must be at most %d bytes", booking.MaxSectionNameLen))
	case r.Section != "" && len(r.SeatIDs) > 0:
		return errf("section goes with count (best available), not with seat_ids")
	case r.SaleID != "" && !booking.ValidSaleID(r.SaleID):
		return errf("sale_id must be 1-48 characters of " + strings.TrimPrefix(ids.EventRule, "1-64 characters of "))
	case r.Channel != "" && booking.CheckChannel(r.Channel) != nil:
		return errf("channel must be an id of at most 64 bytes without ','")
	case len(r.CustomerRef) > maxCustomerRef || !utf8.ValidString(r.CustomerRef) || strings.ContainsFunc(r.CustomerRef, unicode.IsControl):
		return errf("customer_ref must be at most 100 characters without control characters")
	}
	for i, id := range r.SeatIDs {
		if !ids.Valid(id) {
			return errf("seat_ids must be seat ids: 1-128 printable ASCII characters without spaces, braces or |")
		}
		if slices.Contains(r.SeatIDs[:i], id) {
			return errf("seat_ids must not repeat a seat")
		}
	}
	return nil
}

// boxOfficeSale: POST /api/admin/events/{id}/box-office/sales (operator)
// — sell seat_ids, or count seats best available (in section), through
// channel (default box_office: its allocation and general sale) to a
// walk-up customer (customer_ref), paid at the counter at the seats'
// prices. The sale id comes from the Idempotency-Key header or sale_id
// (one of them; both must agree). 201 {sale_id, replayed false, order};
// a repeat of a recorded sale 200 with replayed true and the same order,
// whatever else it asks. Errors: 400 invalid_body / invalid_argument /
// too_many_seats / sales_ended, 404 event_not_found / seat_not_found /
// section_not_found, 409 seat_unavailable or seat_not_for_sale with
// seat_ids, 409 no_adjacent_seats, 503 (not recorded yet: retry with the
// same key; the seats sold in Redis wait for it, and without a retry the
// box-office sweep records the sale). A sale id names one sale per event.
func (s *Server) boxOfficeSale(c *gin.Context) {
	eventID, req, ok := adminEventRequest[boxOfficeSaleRequest](c)
	if !ok {
		return
	}
	key := c.GetHeader("Idempotency-Key")
	switch {
	case key != "" && !booking.ValidSaleID(key):
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument,
			"Idempotency-Key must be 1-48 characters of A-Z, a-z, 0-9, '.', '_' and '-'")
		return
	case key != "" && req.SaleID != "" && key != req.SaleID:
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "Idempotency-Key and sale_id differ")
		return
	case key == "" && req.SaleID == "":
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument,
			"an Idempotency-Key header or sale_id is required, so that a retry sells nothing twice")
		return
	case key != "":
		req.SaleID = key
	}
	if req.Channel == "" {
		req.Channel = booking.ChannelBoxOffice
	}
	ctx := c.Request.Context()
	pid := booking.BoxOfficePaymentID(eventID, req.SaleID)
	// a sale recorded already: its order is the answer (Redis may have
	// been rebuilt since; the ledger is the record)
	order, err := s.Ledger.OrderByPayment(ctx, pid)
	switch {
	case err == nil && order.Status == ledger.StatusRefundDue:
		// its seats go back again, in case the first answer's release failed
		if _, err := s.Store.ReleaseSold(ctx, order.EventID, order.UserID, order.PaymentID, order.SeatIDs); err != nil {
			httpapi.Logger(c).Warn("box-office sale refused by the ledger; its seats are left to the reconciliation",
				zap.String("order_id", order.OrderID), zap.Error(err))
		}
		refusedByLedger(c, order)
		return
	case err == nil:
		noChange(c)
		s.answerBoxOfficeSale(c, req.SaleID, order, true)
		return
	case !errors.Is(err, ledger.ErrOrderNotFound):
		bookinghttp.Fail(c, err)
		return
	}
	res, err := s.Store.SellAtBoxOffice(ctx, booking.BoxOfficeSale{EventID: eventID, SaleID: req.SaleID,
		Channel: req.Channel, SeatIDs: req.SeatIDs, Count: req.Count, Section: req.Section,
		SoldBy: principal(c).Account, CustomerRef: req.CustomerRef, Intent: c.GetInt64(ctxIntent)})
	if refuseSeats(c, err) {
		return
	}
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	// sold in Redis, with the sale's record kept there by the same step:
	// the order goes to the ledger before the answer; a failure from here
	// on is a 503 whose retry (same key) finds the seats sold to this sale
	// (duplicate) and records them, and without a retry the box-office
	// sweep records them from the record
	order, created, err := s.boxOfficeSweeper().Record(ctx, res.Record)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if order.Status != ledger.StatusCompleted {
		// the ledger sold a seat to another order (Redis lost that sale
		// and has not been rebuilt): the ledger's buyer keeps it; this
		// sale's seats went back (Record), nothing was paid
		refusedByLedger(c, order)
		return
	}
	if !created {
		// the box-office sweep recorded it (and audited it) first
		noChange(c)
		s.answerBoxOfficeSale(c, req.SaleID, order, true)
		return
	}
	if !s.audit(c, operators.ActionBoxOfficeSell, eventID, order.OrderID, nil, boxOfficeAudit(req.SaleID, order)) {
		return
	}
	if first := res.Record.Intent; first != 0 && first != c.GetInt64(ctxIntent) && s.Operators != nil {
		// a retry: the call that sold the seats stopped before its
		// record, which this one is
		if err := s.Operators.Discard(ctx, first); err != nil {
			httpapi.Logger(c).Warn("the first call's audit intent not removed; it will read as interrupted",
				zap.Int64("intent", first), zap.Error(err))
		}
	}
	s.answerBoxOfficeSale(c, req.SaleID, order, false)
}

// boxOfficeAudit is what the audit record of a box-office sale keeps.
func boxOfficeAudit(saleID string, o ledger.Order) gin.H {
	return gin.H{"sale_id": saleID, "seat_ids": o.SeatIDs, "amount": o.Amount, "currency": o.Currency,
		"channel": o.Channel, "customer_ref": o.CustomerRef}
}

// answerBoxOfficeSale publishes the order's facts as the ledger keeps
// them (booking_completed, and event_sold_out for the last seat; again on
// a replay: the same ids and times), marks them published, and answers.
// Facts Kafka did not take are the payment-webhook's order sweep's.
func (s *Server) answerBoxOfficeSale(c *gin.Context, saleID string, order ledger.Order, replayed bool) {
	if s.Kafka != nil {
		if err := s.Kafka.Publish(c.Request.Context(), order.Facts()...); err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		if err := s.Ledger.FactsPublished(c.Request.Context(), order.OrderID); err != nil {
			httpapi.Logger(c).Warn("box-office sale's facts left to the order sweep", zap.String("order_id", order.OrderID), zap.Error(err))
		}
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	c.JSON(status, gin.H{"success": true, "sale_id": saleID, "replayed": replayed, "order": order})
}

// boxOfficeSweeper records box-office sales in the ledger: the request's
// (boxOfficeSale) and, on a tick, those a request left in Redis.
func (s *Server) boxOfficeSweeper() *ledger.BoxOfficeSweeper {
	return &ledger.BoxOfficeSweeper{Ledger: s.Ledger, Store: s.Store, Log: s.Log, Recorded: s.auditSweptSale,
		Metrics: s.BoxOfficeMetrics}
}

// auditSweptSale audits a box-office sale the sweep recorded, as its
// request would have: boxoffice.sell by the operator who sold it, via
// system, the record removing the selling call's audit intent (the call
// stopped before its own record: it was no interrupted call). A sale the
// ledger refused (refund_due) is not audited, as the request's 409 is
// not.
func (s *Server) auditSweptSale(ctx context.Context, o ledger.Order, r booking.BoxOfficeRecord) {
	if s.Operators == nil || o.Status != ledger.StatusCompleted {
		return
	}
	saleID := strings.TrimPrefix(o.UserID, booking.BoxOfficeUserPrefix)
	rec, err := s.Operators.Record(ctx, operators.Action{Actor: o.SoldBy, Via: operators.ViaSystem, Role: operators.Operator,
		Action: operators.ActionBoxOfficeSell, EventID: o.EventID, Target: o.OrderID, After: operators.Object(boxOfficeAudit(saleID, o)),
		Intent: r.Intent})
	if err != nil {
		s.Log.Error("swept box-office sale not audited", zap.String("order_id", o.OrderID), zap.Error(err))
		return
	}
	if s.AuditPublisher != nil {
		if err := s.AuditPublisher.Publish(ctx, rec.ID); err != nil {
			s.Log.Warn("operator_action left to the sweep", zap.Int64("id", rec.ID), zap.Error(err))
		}
	}
}

// refusedByLedger answers 409 for a box-office sale the ledger refused
// (refund_due: a seat sold to another order), whose seats
// BoxOfficeSweeper.Record already put back on sale.
func refusedByLedger(c *gin.Context, order ledger.Order) {
	noChange(c)
	status, code := bookinghttp.Status(booking.ErrSeatUnavailable)
	c.AbortWithStatusJSON(status, seatsTakenBody{Error: httpapi.Error{StatusCode: status, Error: http.StatusText(status),
		Code: code, Message: "the ledger has a seat of this sale sold to another order",
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Path: c.Request.URL.Path}, SeatIDs: order.SeatIDs})
}
