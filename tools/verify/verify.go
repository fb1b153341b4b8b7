package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/pass"
)

// Record is what a sale publishes about its fairness: the draw (every
// page's entries in Draw.Entries), the whole admission log, the signed
// head served with its open page, and the key set that signs.
type Record struct {
	EventID string `json:"event_id"`
	// Source is where the log was read: "" a gateway (or a saved
	// record of one), SourceKafka the admission_logged topic, which
	// carries no signed heads.
	Source string           `json:"source,omitempty"`
	Draw   fairness.DrawDoc `json:"draw"`
	// PhaseDraws are the later phases' draws (each with its entries), in
	// the order of Draw.Phases.
	PhaseDraws []fairness.DrawDoc `json:"phase_draws,omitempty"`
	Log        []fairness.Entry   `json:"log"`
	SignedHead string             `json:"signed_head"`
	JWKS       []byte             `json:"jwks"`
}

// SourceKafka is a Record read from the Kafka topics (FromKafka).
const SourceKafka = "kafka"

// Report is what Check found.
type Report struct {
	Entries    int   // admissions in the log
	SignedSize int64 // entries the signed head covers
	Drawn      int   // users in the closed pre-queues (the first phase's and the later phases')
	// Overtakes: pairs of admissions where the one admitted later should
	// have gone first (joined earlier, or drawn earlier); 0 in a fair sale.
	Overtakes int64
}

// key is an admission's place in the order the rules give: a
// pre-queued user's first admission by their draw rank, before every
// other admission by join sequence; a later phase's drawn user's as
// join base + rank (its draw's Base), after everyone who joined before
// that phase's start and before everyone who joined after it.
type key struct {
	group int // 0: drawn, 1: by join sequence
	n     int64
}

func (a key) cmp(b key) int {
	if c := cmp.Compare(a.group, b.group); c != 0 {
		return c
	}
	return cmp.Compare(a.n, b.n)
}

// Check verifies rec for issuer at now: the draw recomputes from its
// published inputs, the log's chain links, the signed head's signature
// and hash, and the order of admissions. The first failure is returned
// with what it means.
func Check(rec Record, issuer string, now time.Time) (Report, error) {
	r := Report{Entries: len(rec.Log), Drawn: len(rec.Draw.Entries)}
	if err := checkDraw(rec.Draw); err != nil {
		return r, err
	}
	for _, d := range rec.PhaseDraws {
		r.Drawn += len(d.Entries)
		if err := checkDraw(d); err != nil {
			return r, fmt.Errorf("phase %s: %w", d.Phase, err)
		}
		if d.Status == fairness.DrawDrawn && d.Base <= 0 && d.Count > 0 {
			return r, fmt.Errorf("phase %s: the draw does not say which join sequence its ranks follow", d.Phase)
		}
	}
	head, err := fairness.CheckChain(fairness.Genesis(rec.EventID), 0, rec.Log)
	if err != nil {
		return r, err
	}
	_ = head
	if err := checkHead(rec, issuer, now, &r); err != nil {
		return r, err
	}
	keys := orderKeys(rec)
	seen := map[int64]int64{}
	for _, e := range rec.Log {
		if e.Reason == fairness.ReasonOffered {
			continue // an offer may precede the admission of the same join
		}
		if prev, dup := seen[e.Seq]; dup {
			return r, fmt.Errorf("join %d was admitted twice (entries %d and %d)", e.Seq, prev, e.Index)
		}
		seen[e.Seq] = e.Index
	}
	r.Overtakes = inversions(keys)
	if r.Overtakes > 0 {
		i, j := firstOvertake(keys)
		return r, fmt.Errorf("%d admissions went ahead of someone due before them; first: entry %d (join %d) was admitted before entry %d (join %d)",
			r.Overtakes, rec.Log[i].Index, rec.Log[i].Seq, rec.Log[j].Index, rec.Log[j].Seq)
	}
	return r, nil
}

// checkHead checks rec's signed head against its log; a log read from
// Kafka has none to check.
func checkHead(rec Record, issuer string, now time.Time, r *Report) error {
	if rec.SignedHead == "" && rec.Source == SourceKafka {
		return nil
	}
	if rec.SignedHead == "" {
		return errors.New("the log's head is not signed (the gateway has no PASS_KEYS): nothing proves what the log said")
	}
	c, err := pass.VerifyLogHead(rec.JWKS, rec.SignedHead, issuer, rec.EventID, now)
	if err != nil {
		return fmt.Errorf("the signed head does not verify against the key set: %w", err)
	}
	r.SignedSize = c.Size
	if c.Size > int64(len(rec.Log)) {
		return fmt.Errorf("the signed head covers %d entries, the log has %d: entries were deleted", c.Size, len(rec.Log))
	}
	at := fairness.Genesis(rec.EventID)
	if c.Size > 0 {
		at = rec.Log[c.Size-1].Hash
	}
	if at != c.Head {
		return fmt.Errorf("the signed head says entry %d hashes to %s, the log has %s: the log was rewritten", c.Size, short(c.Head), short(at))
	}
	return nil
}

// checkDraw: a drawn pre-queue's seed matches its commitment, the digest
// is the published list's, and the list is in the order the seed, the
// digest and the beacon value (when a round was committed) give; a round
// of a chain whose rounds have known times (fairness.BeaconChainOf) came
// out after the pre-queue closed. A drand quicknet value is checked
// against the round's signature (checkBeaconSignature); any other's is to
// be compared with the beacon itself (docs/fairness.md "The beacon").
func checkDraw(d fairness.DrawDoc) error {
	if d.Status != fairness.DrawDrawn {
		return nil
	}
	seed, err := hex.DecodeString(d.Seed)
	if err != nil {
		return fmt.Errorf("the draw's seed %q is not hex", d.Seed)
	}
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != d.Commit {
		return fmt.Errorf("the draw's seed does not match the commitment published before the sale (%s)", short(d.Commit))
	}
	if int64(len(d.Entries)) != d.Count {
		return fmt.Errorf("the draw lists %d users, it says %d were pre-queued", len(d.Entries), d.Count)
	}
	hashes := make([]string, len(d.Entries))
	for i, e := range d.Entries {
		hashes[i] = e.UserHash
	}
	if got := fairness.ListDigest(hashes); got != d.Digest {
		return fmt.Errorf("the draw's digest %s is not its list's (%s): the list was changed after the close", short(d.Digest), short(got))
	}
	if d.Round > 0 && !fairness.ValidBeacon(d.Beacon.Value) {
		return fmt.Errorf("the draw is committed to beacon round %d but its beacon value %q is not 64 hex characters", d.Round, d.Beacon.Value)
	}
	if d.Round == 0 && d.Beacon.Value != "" {
		return fmt.Errorf("the draw carries a beacon value but no committed round")
	}
	if at, ok := d.Beacon.RoundTime(); ok && !d.SalesStart.IsZero() && !at.After(d.SalesStart) {
		return fmt.Errorf("the draw's beacon round %d (%s) came out at %s, before the pre-queue closed at %s: its value was public while the list was open",
			d.Round, d.Source, at.Format(time.RFC3339), d.SalesStart.UTC().Format(time.RFC3339))
	}
	if err := checkBeaconSignature(d.Beacon); err != nil {
		return err
	}
	in := fairness.DrawInput(d.Digest, d.Beacon.Value)
	want := fairness.DrawOrder(d.Seed, in, hashes)
	for i := range want {
		if hashes[i] != want[i] && fairness.DrawKey(d.Seed, in, hashes[i]) != fairness.DrawKey(d.Seed, in, want[i]) {
			return fmt.Errorf("the draw's rank %d is %s, the seed, the digest and the beacon give %s", i+1, short(hashes[i]), short(want[i]))
		}
	}
	return nil
}

// checkBeaconSignature: a round of a beacon whose value is taken from its
// signature (drand quicknet) carries the signature, it is the round's
// under the chain's public key, and the value is its randomness. Nothing
// is asked of the beacon: the key is known.
func checkBeaconSignature(b fairness.Beacon) error {
	c, known := fairness.BeaconChainOf(b.Source)
	if b.Round <= 0 || !known || !c.Checks() {
		return nil
	}
	if b.Signature == "" {
		return fmt.Errorf("the draw's beacon is %s round %d, whose value comes from its signature, but the draw publishes none: its value cannot be checked",
			c.Name, b.Round)
	}
	v, err := c.RoundValue(b.Round, b.Signature)
	if err != nil {
		return fmt.Errorf("the draw's beacon signature: %w", err)
	}
	if v != b.Value {
		return fmt.Errorf("the draw's beacon value %s is not the randomness of %s round %d (%s)", short(b.Value), c.Name, b.Round, short(v))
	}
	return nil
}

// orderKeys gives each log entry its key.
func orderKeys(rec Record) []key {
	// each user's drawn places in the order of the draws: the first
	// admission of a user takes the first, a later one the next
	rank := map[string][]key{}
	for _, e := range rec.Draw.Entries {
		rank[e.UserHash] = append(rank[e.UserHash], key{0, e.Rank})
	}
	for _, d := range rec.PhaseDraws {
		for _, e := range d.Entries {
			rank[e.UserHash] = append(rank[e.UserHash], key{1, d.Base + e.Rank})
		}
	}
	keys := make([]key, len(rec.Log))
	for i, e := range rec.Log {
		if r := rank[e.UserHash]; len(r) > 0 && (r[0].group == 0 || r[0].n > e.Seq) {
			keys[i] = r[0]
			rank[e.UserHash] = r[1:] // a later admission of the same user came by a new join
			continue
		}
		keys[i] = key{1, e.Seq}
	}
	return keys
}

// inversions counts pairs i < j with keys[i] > keys[j] (merge sort).
func inversions(keys []key) int64 {
	a := slices.Clone(keys)
	buf := make([]key, len(a))
	var sort func(lo, hi int) int64
	sort = func(lo, hi int) int64 {
		if hi-lo < 2 {
			return 0
		}
		mid := (lo + hi) / 2
		n := sort(lo, mid) + sort(mid, hi)
		i, j, k := lo, mid, lo
		for i < mid && j < hi {
			if a[j].cmp(a[i]) < 0 {
				n += int64(mid - i)
				buf[k] = a[j]
				j++
			} else {
				buf[k] = a[i]
				i++
			}
			k++
		}
		k += copy(buf[k:], a[i:mid])
		copy(buf[k:], a[j:hi])
		copy(a[lo:hi], buf[lo:hi])
		return n
	}
	return sort(0, len(a))
}

// firstOvertake returns the first j admitted after an i due later, and
// that i (the latest-due admission before j).
func firstOvertake(keys []key) (int, int) {
	top := 0
	for j := 1; j < len(keys); j++ {
		if keys[j].cmp(keys[top]) < 0 {
			return top, j
		}
		if keys[j].cmp(keys[top]) > 0 {
			top = j
		}
	}
	return 0, 0
}

// ReceiptResult is what a receipt proves against the log.
type ReceiptResult struct {
	Seq      int64
	Admitted int64 // the receipt's entry in the log; 0: not admitted yet
	// Overtakes: admissions of joins after the receipt's that came before
	// its admission (or, not admitted yet, so far).
	Overtakes int64
}

// ReceiptChecker checks one kind of receipt of eventID against the key
// set and returns the join sequence it proves; ok false when the receipt
// is not of its kind. The join receipt is one (checkJoinReceipt); another file
// adds a kind by appending to receiptCheckers in its init.
type ReceiptChecker func(jwks []byte, receipt, issuer, eventID string, now time.Time) (seq int64, ok bool, err error)

var receiptCheckers = []ReceiptChecker{checkJoinReceipt}

// CheckReceipt checks receipt and counts who went ahead of it in rec's
// log.
func CheckReceipt(rec Record, receipt, issuer string, now time.Time) (ReceiptResult, error) {
	for _, check := range receiptCheckers {
		seq, ok, err := check(rec.JWKS, receipt, issuer, rec.EventID, now)
		if !ok {
			continue
		}
		if err != nil {
			return ReceiptResult{}, err
		}
		return overtakesOf(rec, seq), nil
	}
	return ReceiptResult{}, errors.New("the receipt is of no known kind (a join receipt is a JSON object: docs/admission-pass.md)")
}

// overtakesOf counts the admissions by join sequence after seq that came
// before seq's own (a queued join's receipt: its key is its sequence).
func overtakesOf(rec Record, seq int64) ReceiptResult {
	r := ReceiptResult{Seq: seq}
	mine := key{1, seq}
	for i, k := range orderKeys(rec) {
		if k == mine {
			r.Admitted = rec.Log[i].Index
			break
		}
		if k.cmp(mine) > 0 {
			r.Overtakes++
		}
	}
	return r
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
