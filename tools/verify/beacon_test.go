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
// came out before the pre-queue closed; a drand quicknet value only with
// the round's signature, and only its randomness.
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
	// a drand quicknet round (one it published, with its signature): out
	// after the close verifies, out before does not
	quick, _ := fairness.BeaconChainOf("drand quicknet")
	const round, sig = 5928395,
		"a5d07c0071b4e386b3ae09206522253c68fefe8490ad59ecc44a7dd0d0745be91da5779e2247a82403fbc0cb9a34cb61"
	const randomness = "51722dab0761a1ba5b39f653fa87bef41b442d91fc926a4d727a6be87373fc58"
	q := d
	q.SalesStart = quick.RoundTime(round).Add(-time.Second)
	q.Beacon = fairness.Beacon{Round: round, Source: "drand quicknet", Value: randomness, Signature: sig}
	q.Entries = nil
	for i, h := range fairness.DrawOrder(seed, fairness.DrawInput(digest, randomness), hashes) {
		q.Entries = append(q.Entries, fairness.DrawEntry{Rank: int64(i) + 1, UserHash: h})
	}
	if err := checkDraw(q); err != nil {
		t.Fatalf("a draw with a signed round after the close does not verify: %v", err)
	}
	early := q
	early.Beacon.Round--
	if err := checkDraw(early); err == nil || !strings.Contains(err.Error(), "its value was public while the list was open") {
		t.Fatalf("a round out at the close: %v", err)
	}
	flipped := []byte(sig)
	flipped[10] ^= 1
	for _, tc := range []struct {
		name, want string
		sig, value string
	}{
		{"no signature", "publishes none", "", randomness},
		{"another signature", "beacon signature", string(flipped), randomness},
		{"not a signature", "96 hex characters", "xyz", randomness},
		{"a value other than the signature's", "is not the randomness", sig, strings.Repeat("00", 32)},
	} {
		c := q
		c.Beacon.Signature, c.Beacon.Value = tc.sig, tc.value
		if err := checkDraw(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("quicknet, %s: %v, want an error saying %q", tc.name, err, tc.want)
		}
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
