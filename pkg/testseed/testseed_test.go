package testseed

import (
	"strings"
	"testing"
)

func TestSeedReplaysFromTheEnvironment(t *testing.T) {
	t.Setenv(Env, "12345")
	if got := Seed(t); got != 12345 {
		t.Fatalf("seed %d, want 12345", got)
	}
	a, b := Rand(t), New(12345)
	for range 10 {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("replayed generator differs: %d vs %d", x, y)
		}
	}
}

func TestFreshSeedsDiffer(t *testing.T) {
	if a, b := Seed(t), Seed(t); a == b {
		t.Fatal("two fresh seeds are equal")
	}
}

func TestReplayLine(t *testing.T) {
	line := Replay(t, 7)
	for _, want := range []string{"random seed 7", Env + "=7", "-run 'TestReplayLine'"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
}
