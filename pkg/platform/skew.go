//go:build !stacktest

package platform

import "time"

// processSkew is zero: only a test build (the stacktest tag,
// skew_stacktest.go) runs a service on a clock set off the host's.
func processSkew() time.Duration { return 0 }
