package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// A draw with a beacon verifies with the published value and not with
// another one, nor without one, nor with a round of a known chain that
// came out before the pre-queue closed.
func TestCheckDrawBeacon(t *testing.T) {
	seed := strings.Repeat("11", 32)
	raw, _ := hex.DecodeString(seed)
	sum := sha256.Sum256(raw)
	hashes := make([]string, 50)
	for i := range hashes {
		hashes[i] = fairness.UserHash("salt", "u"+strconv.Itoa(i))
	}
	digest := fairness.ListDigest(hashes)
	value := strings.Repeat("5a", 32)
	order := fairness.DrawOrder(seed, fairness.DrawInput(digest, value), hashes)
	d := fairness.DrawDoc{EventID: "e", Status: fairness.DrawDrawn, Seed: seed, Commit: hex.EncodeToString(sum[:]),
		Digest: digest, Count: int64(len(order)), Beacon: fairness.Beacon{Round: 9, Source: "drand", Value: value}}
	for i, h := range order {
		d.Entries = append(d.Entries, fairness.DrawEntry{Rank: int64(i) + 1, UserHash: h})
	}
	if err := checkDraw(d); err != nil {
		t.Fatalf("a draw with a beacon does not verify: %v", err)
	}
	// a drand quicknet round: out after the close verifies, out before
	// does not
	quick, _ := fairness.BeaconChainOf("drand quicknet")
	d.SalesStart = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	d.Beacon.Source, d.Beacon.Round = "drand quicknet", quick.FirstRoundAfter(d.SalesStart)
	if err := checkDraw(d); err != nil {
		t.Fatalf("a draw with a round after the close does not verify: %v", err)
	}
	d.Beacon.Round--
	if err := checkDraw(d); err == nil || !strings.Contains(err.Error(), "its value was public while the list was open") {
		t.Fatalf("a round out at the close: %v", err)
	}
	d.Beacon.Round++
	for _, tc := range []struct {
		name, want string
		b          fairness.Beacon
	}{
		{"another value", "the draw's rank", fairness.Beacon{Round: 9, Value: strings.Repeat("00", 32)}},
		{"no beacon", "the draw's rank", fairness.Beacon{}},
		{"a round without its value", "not 64 hex", fairness.Beacon{Round: 9}},
		{"a value without a round", "no committed round", fairness.Beacon{Value: value}},
	} {
		c := d
		c.Beacon = tc.b
		if err := checkDraw(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
