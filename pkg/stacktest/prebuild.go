package stacktest

import "os"

// Prebuild starts building the named services in the background and
// returns at once; a later [Build] or [Start] of them waits for that build
// (and reports its error). A test that first starts something slow of its
// own (a broker cluster) calls it before, so the two overlap.
func Prebuild(names ...string) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "stacktest-bin-")
		if err != nil {
			return // Build tries again and reports why it cannot
		}
		builds.dir = dir
	}
	var missing []string
	b := &build{done: make(chan struct{})}
	for _, n := range names {
		if builds.of[n] == nil {
			builds.of[n] = b
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		go b.run(builds.dir, missing)
	}
}
