package fairness

import (
	"strings"
	"time"
)

// BeaconChain is a public randomness beacon whose rounds come out at
// fixed times: round r at Genesis + (r-1) × Period. For a draw committed
// to a round of a chain boxoffice knows, the round's time is checked
// against the pre-queue's close (docs/fairness.md "The beacon"); for any
// other beacon the operator checks it.
type BeaconChain struct {
	Name    string // how a beacon source names it, e.g. "drand quicknet"
	Hash    string // the chain's hash (hex), which a source may carry instead
	Genesis int64  // Unix seconds of round 1
	Period  int64  // seconds between rounds
}

// beaconChains are the League of Entropy's public drand chains (their
// /info documents give the hash, genesis_time and period).
var beaconChains = []BeaconChain{
	{Name: "drand quicknet", Hash: "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971", Genesis: 1692803367, Period: 3},
	{Name: "drand default", Hash: "8990e7a9aaed2ffed73dbd7092123d6f289930540d7651336225dc172e51b2ce", Genesis: 1595431050, Period: 30},
}

// BeaconChainOf is the chain a beacon source names: its name (any case,
// the whole source) or its hash anywhere in it (an address such as
// https://api.drand.sh/<hash>/public/<round>). False for any other
// source.
func BeaconChainOf(source string) (BeaconChain, bool) {
	s := strings.ToLower(strings.TrimSpace(source))
	for _, c := range beaconChains {
		if s == c.Name || strings.Contains(s, c.Hash) {
			return c, true
		}
	}
	return BeaconChain{}, false
}

// RoundTime is when the chain publishes round (> 0).
func (c BeaconChain) RoundTime(round int64) time.Time {
	return time.Unix(c.Genesis+(round-1)*c.Period, 0).UTC()
}

// FirstRoundAfter is the chain's first round published after t.
func (c BeaconChain) FirstRoundAfter(t time.Time) int64 {
	s := t.Unix() - c.Genesis
	if s < 0 {
		return 1
	}
	return s/c.Period + 2
}

// RoundTime is when b's round is published, for a beacon of a chain
// boxoffice knows (BeaconChainOf); false otherwise, or without a round.
func (b Beacon) RoundTime() (time.Time, bool) {
	c, ok := BeaconChainOf(b.Source)
	if !ok || b.Round <= 0 {
		return time.Time{}, false
	}
	return c.RoundTime(b.Round), true
}
