package fairness

import (
	"testing"
	"time"
)

// A drand chain's rounds fall at the times its clients compute: quicknet
// publishes round 27946612 at midnight UTC on 20 April 2026, and round 1
// at its genesis.
func TestBeaconChainRounds(t *testing.T) {
	for _, src := range []string{"drand quicknet", " Drand QuickNet ",
		"https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971/public/27946612"} {
		c, ok := BeaconChainOf(src)
		if !ok || c.Name != "drand quicknet" {
			t.Fatalf("%q: %+v %v", src, c, ok)
		}
	}
	for _, src := range []string{"", "drand", "nist", "drand quicknet mirror"} {
		if c, ok := BeaconChainOf(src); ok {
			t.Fatalf("%q names %+v", src, c)
		}
	}
	quick, _ := BeaconChainOf("drand quicknet")
	midnight := time.Date(2026, 4, 20, 0, 0, 0, 0, time.UTC)
	if at := quick.RoundTime(27946612); !at.Equal(midnight) {
		t.Fatalf("round 27946612 at %v", at)
	}
	if at := quick.RoundTime(1); at.Unix() != quick.Genesis {
		t.Fatalf("round 1 at %v", at)
	}
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{midnight, 27946613},
		{midnight.Add(-time.Millisecond), 27946612},
		{midnight.Add(2 * time.Second), 27946613},
		{midnight.Add(3 * time.Second), 27946614},
		{time.Unix(0, 0), 1},
	} {
		if got := quick.FirstRoundAfter(tc.at); got != tc.want {
			t.Fatalf("first round after %v: %d, want %d", tc.at, got, tc.want)
		}
		if r := quick.FirstRoundAfter(tc.at); !quick.RoundTime(r).After(tc.at) || (r > 1 && quick.RoundTime(r-1).After(tc.at)) {
			t.Fatalf("round %d is not the first after %v", r, tc.at)
		}
	}
	def, _ := BeaconChainOf("drand default")
	if at, ok := (Beacon{Round: 3, Source: "drand default"}).RoundTime(); !ok || at.Unix() != def.Genesis+60 {
		t.Fatalf("default round 3 at %v %v", at, ok)
	}
	if _, ok := (Beacon{Round: 3, Source: "my beacon"}).RoundTime(); ok {
		t.Fatal("a time for a beacon of no known chain")
	}
}
