package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// A draw with a beacon verifies with the published value and not with
// another one, nor without one.
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
