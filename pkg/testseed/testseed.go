// Package testseed gives a randomized test its seed, one way for every
// such test: a fresh random seed per test, or the seed in the environment
// variable BOXOFFICE_TEST_SEED to replay a failure. A failed test logs its
// seed with the command that replays it. Goroutine interleavings are not
// replayed, only the random choices.
package testseed

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
)

// Env is the variable that replays a seed.
const Env = "BOXOFFICE_TEST_SEED"

// Seed returns tb's seed: BOXOFFICE_TEST_SEED when set, else a fresh
// random one. When tb fails, the seed and the replay command are logged.
func Seed(tb testing.TB) uint64 {
	tb.Helper()
	var seed uint64
	if s := os.Getenv(Env); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			tb.Fatalf("%s=%q: %v", Env, s, err)
		}
		seed = v
	} else {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Log(Replay(tb, seed))
		}
	})
	return seed
}

// Replay is the line that tells how to rerun tb with seed.
func Replay(tb testing.TB, seed uint64) string {
	return fmt.Sprintf("random seed %d; replay: %s=%d go test -run '%s'", seed, Env, seed, tb.Name())
}

// Rand returns a generator seeded with Seed(tb), safe for concurrent use
// (the goroutines of a property test share it).
func Rand(tb testing.TB) *rand.Rand {
	tb.Helper()
	return New(Seed(tb))
}

// New returns a generator for seed, safe for concurrent use.
func New(seed uint64) *rand.Rand {
	return rand.New(&locked{src: rand.NewPCG(seed, seed^0x5eed)})
}

type locked struct {
	mu  sync.Mutex
	src rand.Source
}

func (l *locked) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src.Uint64()
}
