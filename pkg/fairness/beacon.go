package fairness

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudflare/circl/sign/bls"
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
	// PublicKey (hex) checks a round's signature (RoundValue), for a
	// chain whose rounds are unchained BLS signatures on G1 over
	// SHA-256(round, 8 bytes big-endian), drand's
	// bls-unchained-g1-rfc9380 scheme; empty: not checked here.
	PublicKey string
}

// beaconChains are the League of Entropy's public drand chains (their
// /info documents give the hash, genesis_time, period and public_key).
var beaconChains = []BeaconChain{
	{Name: "drand quicknet", Hash: "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971", Genesis: 1692803367, Period: 3,
		PublicKey: "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"},
	// chained rounds (each signs the one before): its value is taken as given
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

// ErrBeaconSignature: a signature that is not the chain's for the round.
var ErrBeaconSignature = errors.New("the signature is not the beacon's for that round")

// Checks reports whether the chain's round signatures are checked here
// (RoundValue).
func (c BeaconChain) Checks() bool { return c.PublicKey != "" }

// RoundValue checks that signature (hex, as the beacon's
// /public/<round> gives it) is the chain's for round and returns the
// round's value, its randomness: hex SHA-256 of the signature's bytes.
// ErrBeaconSignature otherwise, or for a chain that Checks nothing.
func (c BeaconChain) RoundValue(round int64, signature string) (string, error) {
	if !c.Checks() || round <= 0 {
		return "", ErrBeaconSignature
	}
	sig, err := hex.DecodeString(signature)
	if err != nil || len(sig) != 48 {
		return "", fmt.Errorf("%w: a signature is 96 hex characters", ErrBeaconSignature)
	}
	raw, err := hex.DecodeString(c.PublicKey)
	if err != nil {
		return "", err
	}
	var pub bls.PublicKey[bls.KeyG2SigG1]
	if err := pub.UnmarshalBinary(raw); err != nil {
		return "", fmt.Errorf("%s public key: %w", c.Name, err)
	}
	var r [8]byte
	binary.BigEndian.PutUint64(r[:], uint64(round))
	msg := sha256.Sum256(r[:])
	if !bls.Verify(&pub, msg[:], sig) {
		return "", fmt.Errorf("%w: not %s round %d's", ErrBeaconSignature, c.Name, round)
	}
	sum := sha256.Sum256(sig)
	return hex.EncodeToString(sum[:]), nil
}
