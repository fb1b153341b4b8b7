//go:build stacktest

package platform

import (
	"os"
	"time"
)

// processSkew is how far this process's clock is set off the host's: the
// duration in BOXOFFICE_TEST_CLOCK_SKEW ("30s", "-30s"). Only binaries
// built with the stacktest tag (pkg/stacktest builds the services it runs
// so) read it; a production build has no such setting (skew.go).
func processSkew() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("BOXOFFICE_TEST_CLOCK_SKEW"))
	return d
}
