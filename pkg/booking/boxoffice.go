package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/ids"
)

// Box-office sales (docs/operators.md "Selling at the box office"): an
// operator sells seats to a walk-up customer, paid at the counter. The
// sale goes through the same seat checks as a fan's selection and is
// written sold in one atomic step (lua/box_office_sale.lua), so a seat is
// either the box office's or a fan's, never both. Its buyer is a user of
// its own, BoxOfficeBuyer(saleID), completed with the payment id
// BoxOfficePaymentID: the ledger records the order under them, and its
// cancellation and a rebuild from the ledger treat it as any order.

var scriptBoxOfficeSale = newScript("box_office_sale")

// ChannelBoxOffice is the default channel of a box-office sale.
const ChannelBoxOffice = "box_office"

// MaxSaleIDLen bounds a box-office sale id (the client's idempotency key).
const MaxSaleIDLen = 48

// BoxOfficeUserPrefix begins the user id of every box-office buyer;
// BoxOfficePaymentPrefix the payment id of every box-office sale (no
// provider ever sees one).
const (
	BoxOfficeUserPrefix    = ids.ReservedUserPrefix
	BoxOfficePaymentPrefix = "box_"
)

// ValidSaleID reports whether id may name a box-office sale: 1 to
// MaxSaleIDLen characters of A-Z, a-z, 0-9, '.', '_' and '-'.
func ValidSaleID(id string) bool { return len(id) <= MaxSaleIDLen && ids.ValidEvent(id) }

// BoxOfficeBuyer is the user id of a box-office sale's buyer.
func BoxOfficeBuyer(saleID string) string { return BoxOfficeUserPrefix + saleID }

// BoxOfficePaymentID is the payment id of a box-office sale of an event:
// a sale id names one sale per event.
func BoxOfficePaymentID(eventID, saleID string) string {
	return BoxOfficePaymentPrefix + eventID + "_" + saleID
}

// IsBoxOfficePayment reports whether a payment id is a box-office sale's
// (paid at the counter: no provider holds the money).
func IsBoxOfficePayment(paymentID string) bool {
	return strings.HasPrefix(paymentID, BoxOfficePaymentPrefix)
}

// BoxOfficeSale is what a box-office sale asks for: SeatIDs, or Count
// seats best available (in Section, "" any), sold by the operator SoldBy
// to the customer CustomerRef names (both kept for the ledger's order).
type BoxOfficeSale struct {
	EventID     string
	SaleID      string
	Channel     string // "" ChannelBoxOffice
	SeatIDs     []string
	Count       int
	Section     string
	SoldBy      string
	CustomerRef string
	// Intent is the admin call's audit intent (operators.Intent's id, 0
	// none), kept in the sale's record: the audit record of whoever
	// records the sale's order (the call, its retry, the box-office
	// sweep) removes it, so a sale on record is not also an interrupted
	// call.
	Intent int64
}

// MaxBoxOfficeTextLen bounds a box-office sale's SoldBy and CustomerRef.
const MaxBoxOfficeTextLen = 400

// BoxOfficeResult is what a box-office sale sold: PaymentSuccess's
// answer (Sequence 0) with the event's currency, and Record, what the
// ledger's order of the sale is made of.
type BoxOfficeResult struct {
	PaymentResult
	Currency string
	Record   BoxOfficeRecord
}

// BoxOfficeRecord is a box-office sale as its Lua step wrote it, for the
// ledger's order: kept in Redis (the event's boxsales) from the sale
// until BoxOfficeSaleRecorded, so a sale whose ledger write failed is
// recorded by the sweep (ledger.BoxOfficeSweeper), never lost.
type BoxOfficeRecord struct {
	EventID     string
	PaymentID   string
	UserID      string
	SeatIDs     []string
	SeatPrices  []int64
	Amount      int64
	Currency    string
	Phase       string
	Channel     string
	SoldBy      string
	CustomerRef string
	Intent      int64     // the selling call's audit intent (0: none)
	At          time.Time // when the seats were sold (Redis's clock)
	SoldOutAt   time.Time // the event_sold_out the sale caused (zero: none)
}

// boxOfficeRecord is BoxOfficeRecord as the script writes it (JSON of
// strings: numbers as int() text).
type boxOfficeRecord struct {
	User        string `json:"user"`
	Seats       string `json:"seats"`
	At          string `json:"at"`
	SoldOut     string `json:"sold_out"`
	Amount      string `json:"amount"`
	Prices      string `json:"prices"`
	Phase       string `json:"phase"`
	Currency    string `json:"currency"`
	Channel     string `json:"channel"`
	SoldBy      string `json:"sold_by"`
	CustomerRef string `json:"customer_ref"`
	Intent      string `json:"intent"`
}

// parseBoxOfficeRecord reads the record the script wrote for paymentID.
func parseBoxOfficeRecord(eventID, paymentID, v string) (BoxOfficeRecord, error) {
	var w boxOfficeRecord
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return BoxOfficeRecord{}, fmt.Errorf("box-office record %s: %w", paymentID, err)
	}
	at, err1 := strconv.ParseInt(w.At, 10, 64)
	soldOut, err2 := strconv.ParseInt(w.SoldOut, 10, 64)
	amount, err3 := strconv.ParseInt(w.Amount, 10, 64)
	var intent int64
	var err4 error
	if w.Intent != "" {
		intent, err4 = strconv.ParseInt(w.Intent, 10, 64)
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return BoxOfficeRecord{}, fmt.Errorf("box-office record %s: %w", paymentID, err)
	}
	r := BoxOfficeRecord{EventID: eventID, PaymentID: paymentID, UserID: w.User, SeatIDs: SplitSeats(w.Seats),
		SeatPrices: splitPrices(w.Prices), Amount: amount, Currency: w.Currency, Phase: w.Phase, Channel: w.Channel,
		SoldBy: w.SoldBy, CustomerRef: w.CustomerRef, Intent: intent, At: ms(at), SoldOutAt: ms(soldOut)}
	return r, nil
}

// PendingBoxOfficeSales returns the event's box-office sales whose order
// the ledger has not acknowledged (BoxOfficeSaleRecorded), sold at least
// olderThan ago by Redis's clock (0: all), oldest first. The hash holds
// only sales between their Lua step and their ledger write: a handful,
// or those of a PostgreSQL outage.
func (s *Store) PendingBoxOfficeSales(ctx context.Context, eventID string, olderThan time.Duration) ([]BoxOfficeRecord, error) {
	r := s.PendingBoxOfficeSalesOf(ctx, []string{eventID}, olderThan)[0]
	return r.Sales, r.Err
}

// EventBoxOfficeSales is one event's answer of PendingBoxOfficeSalesOf:
// its pending sales, or why they could not be read.
type EventBoxOfficeSales struct {
	EventID string
	Sales   []BoxOfficeRecord
	Err     error
}

// boxOfficeReadChunk bounds the events whose boxsales one pipeline reads.
const boxOfficeReadChunk = 1000

// PendingBoxOfficeSalesOf is PendingBoxOfficeSales of many events, in one
// pipelined round trip per boxOfficeReadChunk events (on a cluster, one
// per node holding some of them; the sweep reads every event's on every
// tick): one answer per event, in the order given, each with its own
// error. Redis's clock is read only for an event with a record (the
// sales between their Lua step and their ledger write: a handful).
func (s *Store) PendingBoxOfficeSalesOf(ctx context.Context, eventIDs []string, olderThan time.Duration) []EventBoxOfficeSales {
	return s.pendingBoxOfficeSalesOf(ctx, eventIDs, olderThan, boxOfficeReadChunk)
}

// pendingBoxOfficeSalesOf is PendingBoxOfficeSalesOf with chunkSize events
// per round trip.
func (s *Store) pendingBoxOfficeSalesOf(ctx context.Context, eventIDs []string, olderThan time.Duration,
	chunkSize int) []EventBoxOfficeSales {
	out := make([]EventBoxOfficeSales, len(eventIDs))
	for lo := 0; lo < len(eventIDs); lo += chunkSize {
		chunk := eventIDs[lo:min(lo+chunkSize, len(eventIDs))]
		cmds := make([]*redis.MapStringStringCmd, len(chunk))
		pipe := s.rdb.Pipeline()
		for i, id := range chunk {
			out[lo+i].EventID = id
			if out[lo+i].Err = checkIDs(id); out[lo+i].Err == nil {
				cmds[i] = pipe.HGetAll(ctx, s.eventKeys(id)[kBoxsales])
			}
		}
		if pipe.Len() > 0 {
			_, _ = pipe.Exec(ctx) // each command keeps its own error
		}
		for i, cmd := range cmds {
			if cmd != nil {
				r := &out[lo+i]
				r.Sales, r.Err = s.pendingBoxOffice(ctx, r.EventID, cmd, olderThan)
			}
		}
	}
	return out
}

// pendingBoxOffice reads one event's boxsales hash as PendingBoxOfficeSales
// answers it.
func (s *Store) pendingBoxOffice(ctx context.Context, eventID string, cmd *redis.MapStringStringCmd,
	olderThan time.Duration) ([]BoxOfficeRecord, error) {
	all, err := cmd.Result()
	if err != nil || len(all) == 0 {
		return nil, wrapRedis("box-office sales", err)
	}
	var cutoff time.Time
	if olderThan > 0 {
		now, err := s.Clock(ctx, eventID)
		if err != nil {
			return nil, fmt.Errorf("box-office sales: %w", err)
		}
		cutoff = now.Add(-olderThan)
	}
	out := make([]BoxOfficeRecord, 0, len(all))
	for pid, v := range all {
		r, err := parseBoxOfficeRecord(eventID, pid, v)
		if err != nil {
			return nil, err
		}
		if olderThan > 0 && r.At.After(cutoff) {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].PaymentID < out[j].PaymentID
	})
	return out, nil
}

// BoxOfficeSaleRecorded forgets a box-office sale's record once the
// ledger has its order (completed, or refund_due with its seats released):
// the sweep has nothing left to do for it. Forgetting it twice is
// harmless.
func (s *Store) BoxOfficeSaleRecorded(ctx context.Context, eventID, paymentID string) error {
	if err := checkIDs(eventID); err != nil {
		return err
	}
	return wrapRedis("box-office sale recorded", s.rdb.HDel(ctx, s.eventKeys(eventID)[kBoxsales], paymentID).Err())
}

func wrapRedis(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: redis: %w", op, err)
}

// SellAtBoxOffice sells the seats of a box-office sale, all or none
// (lua/box_office_sale.lua): the named seats, or the best Count adjacent
// seats (the channel's own allocation first, then general sale). A
// repeat of the sale id answers what the first sold (OutcomeDuplicate),
// whatever the request. Errors: ErrInvalidArgument (no seat, one twice, a bad
// sale id, channel or count), *SeatUnknownError, *SeatsTakenError
// (held or sold by another), *SeatsNotForSaleError (held or killed by
// operators, or allocated to another channel), *TooManySeatsError (over
// the event's order limit), ErrSectionUnknown, *NoAdjacentSeatsError,
// ErrSalesEnded, ErrEventNotFound.
func (s *Store) SellAtBoxOffice(ctx context.Context, sale BoxOfficeSale) (BoxOfficeResult, error) {
	if err := checkIDs(sale.EventID); err != nil {
		return BoxOfficeResult{}, err
	}
	if !ValidSaleID(sale.SaleID) {
		return BoxOfficeResult{}, fmt.Errorf("%w: sale id must be 1-%d characters of %s", ErrInvalidArgument, MaxSaleIDLen, "A-Z, a-z, 0-9, '.', '_' and '-'")
	}
	if sale.Channel == "" {
		sale.Channel = ChannelBoxOffice
	}
	if err := checkChannel(sale.Channel); err != nil {
		return BoxOfficeResult{}, err
	}
	switch {
	case len(sale.SeatIDs) > 0 && sale.Count > 0:
		return BoxOfficeResult{}, fmt.Errorf("%w: give seat ids or a count, not both", ErrInvalidArgument)
	case len(sale.SeatIDs) == 0 && sale.Count < 1:
		return BoxOfficeResult{}, fmt.Errorf("%w: no seat", ErrInvalidArgument)
	case len(sale.SeatIDs) > MaxSeatsPerOrderLimit || sale.Count > MaxSeatsPerOrderLimit:
		return BoxOfficeResult{}, &TooManySeatsError{Max: MaxSeatsPerOrderLimit}
	}
	if len(sale.Section) > MaxSectionNameLen || !utf8.ValidString(sale.Section) {
		return BoxOfficeResult{}, ErrSectionUnknown
	}
	if len(sale.SoldBy) > MaxBoxOfficeTextLen || len(sale.CustomerRef) > MaxBoxOfficeTextLen ||
		!utf8.ValidString(sale.SoldBy) || !utf8.ValidString(sale.CustomerRef) {
		return BoxOfficeResult{}, fmt.Errorf("%w: sold by and customer reference must be UTF-8 of at most %d bytes", ErrInvalidArgument, MaxBoxOfficeTextLen)
	}
	seen := make(map[string]bool, len(sale.SeatIDs))
	for _, id := range sale.SeatIDs {
		if !ids.Valid(id) || strings.IndexByte(id, ',') >= 0 {
			return BoxOfficeResult{}, &SeatUnknownError{Seat: id}
		}
		if seen[id] {
			return BoxOfficeResult{}, fmt.Errorf("%w: seat %q given twice", ErrInvalidArgument, id)
		}
		seen[id] = true
	}
	r, err := s.run(ctx, scriptBoxOfficeSale, sale.EventID, BoxOfficeBuyer(sale.SaleID),
		BoxOfficePaymentID(sale.EventID, sale.SaleID), sale.Channel, strings.Join(sale.SeatIDs, ","), sale.Count, sale.Section,
		sale.SoldBy, sale.CustomerRef, intentArg(sale.Intent))
	if err != nil {
		switch {
		case errors.Is(err, ErrSeatNotForSale):
			var kept SeatsNotForSaleError
			r.scan(&kept.Seats)
			return BoxOfficeResult{}, &kept
		case errors.Is(err, ErrSeatUnavailable):
			var taken SeatsTakenError
			r.scan(&taken.Seats)
			return BoxOfficeResult{}, &taken
		case errors.Is(err, ErrSeatUnknown):
			var unknown SeatUnknownError
			r.scan(&unknown.Seat)
			return BoxOfficeResult{}, &unknown
		case errors.Is(err, ErrTooManySeats):
			var many TooManySeatsError
			r.scan(&many.Max)
			return BoxOfficeResult{}, &many
		case errors.Is(err, ErrNoAdjacentSeats):
			var left NoAdjacentSeatsError
			r.scan(&left.Largest, &left.Available)
			return BoxOfficeResult{}, &left
		}
		return BoxOfficeResult{}, fmt.Errorf("box office sale: %w", err)
	}
	var res BoxOfficeResult
	var prices, record string
	r.scan(&res.Outcome, &res.SeatID, &res.At, &res.SoldOutAt, &res.AmountCents, &prices, &res.Phase, &res.Currency, &record)
	res.SeatIDs, res.SeatPrices = SplitSeats(res.SeatID), splitPrices(prices)
	pid := BoxOfficePaymentID(sale.EventID, sale.SaleID)
	if record == "" {
		// a repeat of a sale whose record is gone (the ledger has its
		// order, or Redis was rebuilt): the reply and the request
		res.Record = BoxOfficeRecord{EventID: sale.EventID, PaymentID: pid, UserID: BoxOfficeBuyer(sale.SaleID),
			SeatIDs: res.SeatIDs, SeatPrices: res.SeatPrices, Amount: res.AmountCents, Currency: res.Currency, Phase: res.Phase,
			Channel: sale.Channel, SoldBy: sale.SoldBy, CustomerRef: sale.CustomerRef, At: res.At, SoldOutAt: res.SoldOutAt}
		return res, nil
	}
	rec, err := parseBoxOfficeRecord(sale.EventID, pid, record)
	if err != nil {
		return BoxOfficeResult{}, err
	}
	res.Record = rec
	return res, nil
}

// intentArg is a sale's audit intent as the script takes it ("" none).
func intentArg(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}
