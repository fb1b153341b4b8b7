package booking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

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
// seats best available (in Section, "" any).
type BoxOfficeSale struct {
	EventID string
	SaleID  string
	Channel string // "" ChannelBoxOffice
	SeatIDs []string
	Count   int
	Section string
}

// BoxOfficeResult is what a box-office sale sold: PaymentSuccess's
// answer (Sequence 0) with the event's currency.
type BoxOfficeResult struct {
	PaymentResult
	Currency string
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
		BoxOfficePaymentID(sale.EventID, sale.SaleID), sale.Channel, strings.Join(sale.SeatIDs, ","), sale.Count, sale.Section)
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
	var prices string
	r.scan(&res.Outcome, &res.SeatID, &res.At, &res.SoldOutAt, &res.AmountCents, &prices, &res.Phase, &res.Currency)
	res.SeatIDs, res.SeatPrices = SplitSeats(res.SeatID), splitPrices(prices)
	return res, nil
}
