package payment

import (
	"errors"
	"testing"
)

func TestCheckStatus(t *testing.T) {
	for _, tc := range []struct {
		status, path string
		want         error
	}{
		{StatusSuccess, PathSuccess, nil},
		{StatusFailure, PathFailure, nil},
		{StatusFailure, PathSuccess, ErrStatusMismatch},
		{StatusSuccess, PathFailure, ErrStatusMismatch},
		{"", PathSuccess, ErrNoStatus},
		{"SUCCESS", PathSuccess, ErrStatusMismatch},
		{StatusSuccess, "/other", ErrStatusMismatch},
	} {
		err := Webhook{Status: tc.status}.CheckStatus(StatusFor(tc.path))
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%q on %s: %v, want %v", tc.status, tc.path, err, tc.want)
		}
	}
}
