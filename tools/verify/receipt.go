package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/receipt"
)

// checkJoinReceipt: a join receipt (the join's "receipt", or the file the
// page downloads; docs/admission-pass.md, "The join receipt") is a JSON
// object; its signed root, event and inclusion path are checked against
// the key set (receipt.VerifyFor), and it proves its leaf's sequence.
func checkJoinReceipt(jwks []byte, raw, _, eventID string, _ time.Time) (int64, bool, error) {
	if !strings.HasPrefix(strings.TrimSpace(raw), "{") {
		return 0, false, nil
	}
	r, err := receipt.Parse([]byte(raw))
	if err != nil {
		return 0, true, err
	}
	_, err = receipt.VerifyFor(r, jwks, eventID)
	switch {
	case errors.Is(err, receipt.ErrWrongEvent):
		return 0, true, fmt.Errorf("the receipt is for another event than %s: %w", eventID, err)
	case errors.Is(err, receipt.ErrBadSignature):
		return 0, true, fmt.Errorf("the receipt's signature does not verify against the key set: %w", err)
	case err != nil:
		return 0, true, err
	}
	return r.Leaf.Seq, true, nil
}
