package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/promx"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// RecordBoxOfficeSale records the order of a box-office sale as its Lua
// step wrote it (booking.BoxOfficeRecord): the payment, at the sale's
// amount and prices, then the order with its channel, operator and
// customer reference, idempotently on the payment id as RecordSale, also
// when two calls record it at once (the later one reads the earlier's);
// created reports that this call wrote the order. A seat the ledger sold
// to another order makes it refund_due (RefundSeatTaken): the money goes
// back at the counter.
func (l *Ledger) RecordBoxOfficeSale(ctx context.Context, r booking.BoxOfficeRecord) (o Order, created bool, err error) {
	seats := strings.Join(r.SeatIDs, ",")
	if err := l.RecordPayment(ctx, Payment{PaymentID: r.PaymentID, EventID: r.EventID, UserID: r.UserID, SeatID: seats,
		Amount: r.Amount, Currency: r.Currency, SeatPrices: r.SeatPrices}); err != nil {
		return Order{}, false, err
	}
	sale := Sale{PaymentID: r.PaymentID, EventID: r.EventID, UserID: r.UserID, SeatID: seats,
		SeatIDs: r.SeatIDs, SeatPrices: r.SeatPrices, Phase: r.Phase, At: r.At, SoldOutAt: r.SoldOutAt,
		Channel: r.Channel, SoldBy: r.SoldBy, CustomerRef: r.CustomerRef}
	for tries := 1; ; tries++ {
		o, created, err = l.recordSale(ctx, sale)
		// another call wrote this sale (a sweep of another gateway, or the
		// request) at the same moment: the sold-seat index stopped this
		// write before the payment id's conflict could; again, it reads
		// that order (or, for another sale of a seat, records a refund)
		if !IsSeatConflict(err) || tries == 3 {
			return o, created, err
		}
	}
}

// BoxOfficeSweeper records the box-office sales that were sold in Redis
// but whose request did not get their order into the ledger (PostgreSQL
// down or the gateway gone between the two): each sale's Lua step keeps
// its record in Redis until the ledger has the order
// (booking.Store.PendingBoxOfficeSales), and on a tick (Run) every record
// older than Age is recorded (Record). A paid sale is never dropped: a
// record stays until PostgreSQL takes it, however long that is. The
// order's facts enter order_outbox with it; the order sweep
// (OrderPublisher) publishes them once. Any number of gateways may
// sweep: recording is idempotent on the payment id.
type BoxOfficeSweeper struct {
	Ledger *Ledger
	Store  *booking.Store
	Log    *zap.Logger
	// Age is how long a record is left to the request that wrote it
	// before a sweep takes it (default 5 s).
	Age time.Duration
	// Recorded, when set, is called with each order a sweep wrote (not
	// one the request or another sweep wrote first) and the sale's record:
	// the gateway audits the sale there, as the request would have, and
	// its record removes the selling call's audit intent (Intent).
	Recorded func(ctx context.Context, o Order, r booking.BoxOfficeRecord)
	// Metrics, when set, gets the sales left unrecorded after every sweep.
	Metrics *BoxOfficeMetrics
}

// BoxOfficeMetrics are the box-office sweep's metrics
// (NewBoxOfficeMetrics).
type BoxOfficeMetrics struct {
	pending prometheus.Gauge
}

// NewBoxOfficeMetrics registers with reg (nil: unregistered):
//
//	boxoffice_ledger_box_office_sales_pending  gauge, box-office sales older than the sweep's Age that the last sweep found in Redis and could not record in the ledger
func NewBoxOfficeMetrics(reg prometheus.Registerer) *BoxOfficeMetrics {
	f := promx.New(reg, "ledger")
	return &BoxOfficeMetrics{
		pending: f.Gauge("box_office_sales_pending",
			"Box-office sales sold in Redis that the last sweep could not record in the ledger."),
	}
}

// Pending is the gauge of unrecorded sales (for tests).
func (m *BoxOfficeMetrics) Pending() prometheus.Gauge { return m.pending }

func (s *BoxOfficeSweeper) log() *zap.Logger {
	if s.Log == nil {
		return zap.NewNop()
	}
	return s.Log
}

// Record records one box-office sale (RecordBoxOfficeSale); when the
// ledger refused its seats (refund_due: sold to another order, which Redis
// had lost) they go back on sale in Redis, so no seat is sold twice.
// Then Redis forgets the record (a failure there is logged: the next
// sweep records the sale again, which changes nothing, and forgets it).
// The order is returned whatever its status; created reports that this
// call wrote it.
func (s *BoxOfficeSweeper) Record(ctx context.Context, r booking.BoxOfficeRecord) (o Order, created bool, err error) {
	o, created, err = s.Ledger.RecordBoxOfficeSale(ctx, r)
	if err != nil {
		return Order{}, false, err
	}
	if o.RefundReason == RefundSeatTaken {
		_, err := s.Store.ReleaseSold(ctx, o.EventID, o.UserID, o.PaymentID, o.SeatIDs)
		if err != nil && !errors.Is(err, booking.ErrEventNotFound) {
			return Order{}, false, fmt.Errorf("release a refused box-office sale: %w", err)
		}
	}
	if err := s.Store.BoxOfficeSaleRecorded(ctx, r.EventID, r.PaymentID); err != nil {
		s.log().Warn("box-office sale recorded; its Redis record left to the sweep", zap.String("payment_id", r.PaymentID), zap.Error(err))
	}
	return o, created, nil
}

// Sweep records every box-office sale of every event whose record is
// older than Age, and returns how many it recorded. The events' records
// are read in one pipelined round trip (a few for many events:
// booking.Store.PendingBoxOfficeSalesOf). It goes on past an event or a
// sale that fails and returns the errors joined; Metrics gets the sales it
// found and did not record.
func (s *BoxOfficeSweeper) Sweep(ctx context.Context) (int, error) {
	ids, err := s.Store.EventIDs(ctx)
	if err != nil {
		return 0, err
	}
	n, left := 0, 0
	var errs []error
	for _, ev := range s.Store.PendingBoxOfficeSalesOf(ctx, ids, sweepGrace(s.Age)) {
		if ev.Err != nil {
			errs = append(errs, fmt.Errorf("event %s: %w", ev.EventID, ev.Err))
			continue
		}
		for _, r := range ev.Sales {
			o, created, err := s.Record(ctx, r)
			if err != nil {
				errs = append(errs, fmt.Errorf("box-office sale %s: %w", r.PaymentID, err))
				left++
				continue
			}
			n++
			if created && s.Recorded != nil {
				s.Recorded(ctx, o, r)
			}
			if o.Status == StatusRefundDue {
				s.log().Warn("box-office sale refused by the ledger: a seat was sold to another order; refund at the counter",
					zap.String("order_id", o.OrderID), zap.Strings("seat_ids", o.SeatIDs))
			}
		}
	}
	if s.Metrics != nil {
		s.Metrics.pending.Set(float64(left))
	}
	return n, errors.Join(errs...)
}

// Run sweeps every interval until ctx ends.
func (s *BoxOfficeSweeper) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, s.log(), "box-office sales", s.Sweep)
}
