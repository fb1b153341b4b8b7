package payment

import (
	"errors"
	"fmt"
)

// Webhook outcomes: the body's status field, one per path.
const (
	StatusSuccess = "success" // posted to PathSuccess
	StatusFailure = "failure" // posted to PathFailure
)

// Errors of CheckStatus.
var (
	ErrNoStatus       = errors.New("missing status")
	ErrStatusMismatch = errors.New("status does not match the webhook path")
)

// StatusFor returns the status a webhook posted to path must carry ("" for
// an unknown path).
func StatusFor(path string) string {
	switch path {
	case PathSuccess:
		return StatusSuccess
	case PathFailure:
		return StatusFailure
	}
	return ""
}

// CheckStatus requires the signed body's status to be want (StatusSuccess
// or StatusFailure, the outcome of the path it was posted to). Only the
// body is signed, so without this a captured failure webhook posted to the
// success path would complete a sale.
func (w Webhook) CheckStatus(want string) error {
	switch w.Status {
	case want:
		return nil
	case "":
		return ErrNoStatus
	}
	return fmt.Errorf("%w: %q posted to the %s path", ErrStatusMismatch, w.Status, want)
}
