package stacktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// The service binaries a test binary builds, once each and in the
// background where it can, deleted by [Main] when its tests end.

// Build compiles the named services into a directory of this test binary
// and returns it: one "go build -o <dir>/ ./services/<name>..." from the
// repository root for every service not built yet (one go command shares
// its work across the binaries; on a small machine that is much faster
// than one command per service). Each service is built once per test
// binary; concurrent and later calls reuse it. [Main] deletes the
// directory when the tests end.
func Build(t testing.TB, names ...string) string {
	t.Helper()
	dir, waits, err := startBuilds(names)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, w := range waits {
		<-w.done
		errs = append(errs, w.err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	return dir
}

// Prebuild starts building the named services in the background and
// returns at once; a later [Build] or [Start] of them waits for that build
// (and reports its error). A test that first starts something slow of its
// own (a broker cluster) calls it before, so the two overlap.
func Prebuild(names ...string) {
	_, _, _ = startBuilds(names) // on error, Build tries again and reports why it cannot
}

// startBuilds starts, in the background, one build of the named services
// that no build has claimed yet, and returns the directory of the binaries
// and every build that makes one of them.
func startBuilds(names []string) (string, []*build, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "stacktest-bin-")
		if err != nil {
			return "", nil, err
		}
		builds.dir = dir
	}
	var missing []string
	b := &build{done: make(chan struct{})}
	var waits []*build
	for _, n := range names {
		if builds.of[n] == nil {
			builds.of[n] = b
			missing = append(missing, n)
		}
		if !slices.Contains(waits, builds.of[n]) {
			waits = append(waits, builds.of[n])
		}
	}
	if len(missing) > 0 {
		go b.run(builds.dir, missing)
	}
	return builds.dir, waits, nil
}

// build is one go build of one or more services.
type build struct {
	done chan struct{} // closed when it has finished
	err  error
}

var builds = struct {
	mu  sync.Mutex
	dir string
	of  map[string]*build
}{of: map[string]*build{}}

func (b *build) run(dir string, names []string) {
	defer close(b.done)
	root, err := redistest.RepoRoot()
	if err != nil {
		b.err = err
		return
	}
	// the stacktest tag: a service may then be run on a clock set off the
	// host's (BOXOFFICE_TEST_CLOCK_SKEW, pkg/platform processSkew)
	args := []string{"build", "-tags", "stacktest", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(root, "services", n, "main.go")); err != nil {
			b.err = fmt.Errorf("%s has no main.go: %w", n, err)
			return
		}
		args = append(args, "./services/"+n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Main runs the tests of a package that uses stacktest and deletes the
// binaries [Build] made for them. Call it from TestMain:
//
//	func TestMain(m *testing.M) { stacktest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	builds.mu.Lock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
	builds.mu.Unlock()
	os.Exit(code)
}
