package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/pass"
)

// checkTicket: the signed queue ticket (docs/admission-pass.md) is a
// receipt of a queued join: its seq against the key set.
func checkTicket(jwks []byte, receipt, issuer, eventID string, now time.Time) (int64, bool, error) {
	if headerType(receipt) != pass.TicketType {
		return 0, false, nil
	}
	c, err := pass.VerifyTicket(jwks, receipt, issuer, eventID, now)
	if errors.Is(err, pass.ErrWrongEvent) {
		return 0, true, fmt.Errorf("the receipt is for another event than %s", eventID)
	}
	if err != nil {
		return 0, true, fmt.Errorf("the receipt's signature does not verify against the key set: %w", err)
	}
	return c.Seq, true, nil
}

// headerType is a JWT's header typ ("" when it is none).
func headerType(token string) string {
	head, _, _ := strings.Cut(strings.TrimSpace(token), ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Typ string `json:"typ"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.Typ
}
