package fairness

import (
	"errors"
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

// quicknetRound is a round drand quicknet published
// (https://api.drand.sh/<quicknet hash>/public/5928395): its signature
// and the randomness drand gives for it.
var quicknetRound = struct {
	round      int64
	signature  string
	randomness string
}{5928395, "a5d07c0071b4e386b3ae09206522253c68fefe8490ad59ecc44a7dd0d0745be91da5779e2247a82403fbc0cb9a34cb61",
	"51722dab0761a1ba5b39f653fa87bef41b442d91fc926a4d727a6be87373fc58"}

// A quicknet round's signature checks against the chain's public key and
// gives the round's randomness; the same signature for another round, a
// changed signature, malformed hex and a chain without a key are refused.
func TestBeaconRoundValue(t *testing.T) {
	quick, _ := BeaconChainOf("drand quicknet")
	q := quicknetRound
	v, err := quick.RoundValue(q.round, q.signature)
	if err != nil || v != q.randomness {
		t.Fatalf("round %d: %q %v, want %s", q.round, v, err, q.randomness)
	}
	flipped := []byte(q.signature)
	flipped[len(flipped)-1] = '0'
	def, _ := BeaconChainOf("drand default")
	for name, f := range map[string]func() (string, error){
		"another round":       func() (string, error) { return quick.RoundValue(q.round+1, q.signature) },
		"a changed signature": func() (string, error) { return quick.RoundValue(q.round, string(flipped)) },
		"not hex":             func() (string, error) { return quick.RoundValue(q.round, "zz"+q.signature[2:]) },
		"too short":           func() (string, error) { return quick.RoundValue(q.round, q.signature[:94]) },
		"a chain not checked": func() (string, error) { return def.RoundValue(q.round, q.signature) },
	} {
		if v, err := f(); !errors.Is(err, ErrBeaconSignature) || v != "" {
			t.Errorf("%s: %q %v", name, v, err)
		}
	}
}
