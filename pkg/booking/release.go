package booking

import (
	"context"
	"fmt"
)

// Putting the seats of a cancelled sale back on sale (the ledger's
// Canceller, docs/ledger.md "Cancellations").
var scriptReleaseSold = newScript("release_sold")

// ReleaseResult is what ReleaseSold did.
type ReleaseResult struct {
	Released int64 // seats that became available
	// Left are the seats named that were not sold to the order's buyer
	// (released before, or never sold to them): unchanged.
	Left []string
}

// ReleaseSold makes the seats of userID's order (paymentID) available
// again (lua/release_sold.lua), in one atomic step: each seat still sold
// to userID under that payment becomes available, the sold count drops
// by as many, and the buyer's selection keeps the other seats. A repeat
// releases nothing (the seats are Left). Errors: ErrEventNotFound.
func (s *Store) ReleaseSold(ctx context.Context, eventID, userID, paymentID string, seatIDs []string) (ReleaseResult, error) {
	if err := checkIDs(append([]string{eventID, userID, paymentID}, seatIDs...)...); err != nil {
		return ReleaseResult{}, err
	}
	args := make([]any, 0, 2+len(seatIDs))
	args = append(args, userID, paymentID)
	for _, id := range seatIDs {
		args = append(args, id)
	}
	r, err := s.run(ctx, scriptReleaseSold, eventID, args...)
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("release sold: %w", err)
	}
	var res ReleaseResult
	r.scan(&res.Released, &res.Left)
	return res, nil
}
