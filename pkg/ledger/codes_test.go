package ledger_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// Codes are recorded as digests with their batch, loaded into Redis in
// the same transaction, redeemed, and after a rebuild from the ledger
// keep their uses and users, except that a holder who has not bought
// may join once more: the rebuild lost their place in the queue.
func TestCodesRecordedRedeemedAndRestored(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "codes", Name: "Codes", Rows: 2, SeatsPerRow: 5, Capacity: 5})
	ctx := context.Background()
	key := []byte("ledger test code key")
	digest := func(code string) string {
		n, _ := booking.NormaliseCode(code)
		return booking.CodeDigest(key, n)
	}
	b := &ledger.CodeBatch{EventID: g.event, Uses: 1, Seats: 2, Actor: "ops@example.com"}
	load := func(ctx context.Context, recs []booking.CodeRecord) error {
		return g.store.LoadCodes(ctx, g.event, recs)
	}
	if err := g.led.AddCodes(ctx, b, []string{digest("AAAA-1111"), digest("BBBB-2222")}, load); err != nil || b.ID == 0 || b.Count != 2 {
		t.Fatalf("add codes: %+v %v", b, err)
	}
	// refused in Redis: nothing recorded
	bad := &ledger.CodeBatch{EventID: g.event, Uses: 1, Actor: "ops"}
	if err := g.led.AddCodes(ctx, bad, []string{digest("CCCC-3333")}, func(context.Context, []booking.CodeRecord) error {
		return booking.ErrEventNotFound
	}); !errors.Is(err, booking.ErrEventNotFound) {
		t.Fatalf("a refused load: %v", err)
	}
	if ev, err := g.led.CodeEvent(ctx, digest("CCCC-3333")); err != nil || ev != "" {
		t.Fatalf("a refused batch left a code of %q: %v", ev, err)
	}
	if ev, err := g.led.CodeEvent(ctx, digest("aaaa1111")); err != nil || ev != g.event {
		t.Fatalf("code event: %q %v", ev, err)
	}
	if err := g.led.AddCodes(ctx, &ledger.CodeBatch{EventID: "nope", Uses: 1, Actor: "ops"}, []string{digest("X")},
		load); !errors.Is(err, ledger.ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}

	r, err := g.store.EnqueueCode(ctx, g.event, "fan1", digest("AAAA-1111"))
	if err != nil || r.Code == nil {
		t.Fatalf("redeem: %+v %v", r, err)
	}
	for range 2 { // a repeat changes nothing
		if err := g.led.RecordRedemptions(ctx, g.event, r.Outbox); err != nil {
			t.Fatal(err)
		}
	}
	batches, err := g.led.CodeBatches(ctx, g.event)
	if err != nil || len(batches) != 1 || batches[0].Used != 1 || batches[0].Bound != 1 || batches[0].Count != 2 {
		t.Fatalf("batches: %+v %v", batches, err)
	}

	// a rebuild keeps the code used and bound
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if _, err := g.store.EnqueueCode(ctx, g.event, "fan2", digest("AAAA-1111")); !errors.Is(err, booking.ErrCodeTaken) {
		t.Fatalf("a bound code after the rebuild: %v", err)
	}
	r2, err := g.store.EnqueueCode(ctx, g.event, "fan2", digest("BBBB-2222"))
	if err != nil || r2.Code == nil {
		t.Fatalf("an unused code after the rebuild: %+v %v", r2, err)
	}
	// fan1's hold went with Redis: their single-use code lets them join
	// again, as the next use
	r1, err := g.store.EnqueueCode(ctx, g.event, "fan1", digest("AAAA-1111"))
	if err != nil || r1.Code == nil || r1.Code.Use != 2 {
		t.Fatalf("the holder's join again after the rebuild: %+v %v", r1, err)
	}
	if err := g.led.RecordRedemptions(ctx, g.event, append(r1.Outbox, r2.Outbox...)); err != nil {
		t.Fatal(err)
	}
	// a buyer gets no use back from the next rebuild; a fan who did not
	// buy does
	if ok, err := g.buy("fan1", "A1"); !ok {
		t.Fatalf("buy: %v", err)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	codes, err := g.led.Codes(ctx, g.event)
	if err != nil || len(codes) != 2 {
		t.Fatalf("codes: %+v %v", codes, err)
	}
	if c := codes[0]; c.User != "fan1" || c.Used != 2 || c.Uses != 2 { // none left
		t.Errorf("the buyer's code as loaded: %+v", c)
	}
	if c := codes[1]; c.User != "fan2" || c.Used != 1 || c.Uses != 2 {
		t.Errorf("the waiting fan's code as loaded: %+v", c)
	}
	if _, err := g.store.EnqueueCode(ctx, g.event, "fan2", digest("BBBB-2222")); err != nil {
		t.Fatalf("fan2 after the second rebuild: %v", err)
	}
}

// Phase changes are recorded with who and when, each with its facts (the
// phase that ended, the one that started), published by the sweep when
// Kafka did not take them; a repeat records nothing; a rebuild sets the
// last phase again.
func TestPhasesRecordedPublishedAndRestored(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "phases", Name: "Phases", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	set := func(p booking.PhaseState) (ledger.PhaseChange, error) {
		return g.led.SetPhase(ctx, g.event, p, "otto", func(ctx context.Context) (booking.PhaseState, bool, error) {
			return g.store.SetPhase(ctx, g.event, p)
		})
	}
	club, err := set(booking.PhaseState{Phase: "fanclub", Audience: booking.AudienceCode})
	if err != nil || club.ID == 0 || club.Previous != "" || len(club.Facts()) != 1 {
		t.Fatalf("first phase: %+v %v", club, err)
	}
	if again, err := set(booking.PhaseState{Phase: "fanclub", Audience: booking.AudienceCode}); err != nil || again.ID != 0 {
		t.Fatalf("a repeat: %+v %v", again, err)
	}
	if _, err := set(booking.PhaseState{Phase: "x", Audience: "nobody"}); !errors.Is(err, booking.ErrInvalidArgument) {
		t.Fatalf("a bad audience: %v", err)
	}
	p := &ledger.PhasePublisher{Ledger: g.led, Kafka: g.rec, Age: time.Nanosecond}
	g.rec.FailWith(errors.New("kafka down"))
	general, err := set(booking.PhaseState{Phase: "general", Audience: booking.AudiencePublic})
	if err != nil || general.Previous != "fanclub" {
		t.Fatalf("general sale: %+v %v", general, err)
	}
	if err := p.Publish(ctx, general); err == nil {
		t.Fatal("published with Kafka down")
	}
	g.rec.FailWith(nil)
	if n, err := p.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	started, ended := g.rec.Topic(events.TopicPhaseStarted), g.rec.Topic(events.TopicPhaseEnded)
	if len(started) != 2 || len(ended) != 1 || ended[0].Reason != "phase=fanclub" || ended[0].Sequence != general.ID ||
		started[1].Reason != "audience=public phase=general" || started[1].UserID != "otto" {
		t.Fatalf("facts: started %+v, ended %+v", started, ended)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if e, err := g.store.GetEvent(ctx, g.event); err != nil || e.Phase != "general" || e.Audience != booking.AudiencePublic {
		t.Fatalf("after the rebuild: %q %q %v", e.Phase, e.Audience, err)
	}
}

// Registration: fans register while the window is open (a repeat changes
// nothing), not before or after; the draw at the close selects the
// asked number, recomputable from the revealed seed and the registrants
// (booking.DrawOrder against the commitment published when the window
// was set), uncorrelated with registration order over 10,000
// registrants; the selected are marked in Redis (kept by a rebuild); a
// repeated draw is the same draw.
func TestRegistrationDraw(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "reg", Name: "Registration", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	now := time.Now()
	if _, _, err := g.led.Register(ctx, g.event, "early"); !errors.Is(err, ledger.ErrNoRegistration) {
		t.Fatalf("no window: %v", err)
	}
	w, err := g.led.OpenRegistration(ctx, g.event, "verified", now.Add(time.Hour), now.Add(2*time.Hour), "otto")
	if err != nil || len(w.Commit) != 64 || w.Seed != "" || w.OpenedFact().Validate() != nil {
		t.Fatalf("open: %+v %v", w, err)
	}
	if _, _, err := g.led.Register(ctx, g.event, "early"); !errors.Is(err, ledger.ErrRegistrationClosed) {
		t.Fatalf("before the window: %v", err)
	}
	w2, err := g.led.OpenRegistration(ctx, g.event, "verified", now.Add(-time.Hour), now.Add(time.Hour), "otto")
	if err != nil || w2.Commit != w.Commit {
		t.Fatalf("a changed window keeps its commitment: %+v %v", w2, err)
	}
	r, created, err := g.led.Register(ctx, g.event, "fan0")
	if err != nil || !created || r.ID == 0 || r.Fact().Validate() != nil {
		t.Fatalf("register: %+v %v %v", r, created, err)
	}
	if again, created, err := g.led.Register(ctx, g.event, "fan0"); err != nil || created || again.ID != r.ID {
		t.Fatalf("a repeat: %+v %v %v", again, created, err)
	}
	const n = 10_000
	users := []string{"fan0"}
	for i := 1; i < n; i++ {
		users = append(users, "fan"+strconv.Itoa(i))
	}
	if _, err := g.led.Pool().Exec(ctx, `INSERT INTO registrations (event_id, user_id)
		SELECT $1, u FROM unnest($2::text[]) WITH ORDINALITY AS t(u, o) ORDER BY o`, g.event, users[1:]); err != nil {
		t.Fatal(err)
	}
	if _, err := g.led.Draw(ctx, g.event, ledger.SelectDraw, 100, "otto", nil); !errors.Is(err, ledger.ErrRegistrationOpen) {
		t.Fatalf("a draw while open: %v", err)
	}
	if _, err := g.led.OpenRegistration(ctx, g.event, "verified", now.Add(-time.Hour), now.Add(-time.Second), "otto"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.led.Register(ctx, g.event, "late"); !errors.Is(err, ledger.ErrRegistrationClosed) {
		t.Fatalf("after the window: %v", err)
	}
	var chosen []string
	mark := func(ctx context.Context, sel []string) error {
		chosen = sel
		return g.store.MarkSelected(ctx, g.event, sel)
	}
	if _, err := g.led.Draw(ctx, g.event, "lottery", 100, "otto", mark); !errors.Is(err, booking.ErrInvalidArgument) {
		t.Fatalf("a bad method: %v", err)
	}
	d, err := g.led.Draw(ctx, g.event, ledger.SelectDraw, 5000, "otto", mark)
	if err != nil || !d.Fresh || d.Selected != 5000 || d.Registered != n || d.Seed == "" || d.DrawnFact().Validate() != nil {
		t.Fatalf("draw: %+v %v", d, err)
	}
	order, err := booking.DrawOrder(d.Seed, w.Commit, g.event, users)
	if err != nil || !slices.Equal(order[:5000], chosen) {
		t.Fatalf("the draw is not recomputable from the seed: %v", err)
	}
	// Spearman's rank correlation of registration order and draw order
	rank := map[string]int{}
	for i, u := range order {
		rank[u] = i
	}
	var d2 float64
	for i, u := range users {
		x := float64(i - rank[u])
		d2 += x * x
	}
	if rho := 1 - 6*d2/(float64(n)*(float64(n)*float64(n)-1)); math.Abs(rho) > 0.05 {
		t.Fatalf("rank correlation with registration order %.3f", rho)
	}
	if again, err := g.led.Draw(ctx, g.event, ledger.SelectFirstCome, 1, "ada", mark); err != nil || again.Fresh || again.Method != ledger.SelectDraw || again.Selected != 5000 {
		t.Fatalf("a repeated draw: %+v %v", again, err)
	}
	if _, err := g.led.OpenRegistration(ctx, g.event, "verified", now, now.Add(time.Hour), "otto"); !errors.Is(err, ledger.ErrRegistrationDrawn) {
		t.Fatalf("a window changed after the draw: %v", err)
	}
	in, out := chosen[0], order[n-1]
	if r, _ := g.led.Registrant(ctx, g.event, in); r.Selected == nil || !*r.Selected {
		t.Fatalf("selected registrant %+v", r)
	}

	// a rebuild keeps who was selected; in the registered phase they join
	// and the others are told
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.store.SetPhase(ctx, g.event, booking.PhaseState{Phase: "verified", Audience: booking.AudienceRegistered}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.store.Enqueue(ctx, g.event, out); !errors.Is(err, booking.ErrNotSelected) {
		t.Fatalf("a fan not selected: %v", err)
	}
	if _, err := g.store.Enqueue(ctx, g.event, in); err != nil {
		t.Fatalf("a selected fan: %v", err)
	}
}

// A code's use rides in the join's outbox entry: a gateway that stopped
// right after the join's script loses nothing, since the sweep records
// the redemption in the ledger and then publishes its fact; while the
// ledger cannot record it, neither the fact nor the join's
// booking_request is published and the entry stays for the next sweep.
func TestCodeUseRecordedFromTheJoinsOutbox(t *testing.T) {
	t.Parallel()
	g, digest := roomTakenWithACode(t, "codeuse")
	ctx := context.Background()
	g.join("fan0") // a join without a code
	// the join's script redeems the code; its gateway stops before
	// anything else
	res, err := g.store.EnqueueCode(ctx, g.event, "fan1", digest)
	if err != nil || res.Code == nil {
		t.Fatalf("redeem: %+v %v", res, err)
	}
	used := func() int64 {
		t.Helper()
		bs, err := g.led.CodeBatches(ctx, g.event)
		if err != nil || len(bs) != 1 {
			t.Fatalf("batches: %+v %v", bs, err)
		}
		return bs[0].Used
	}

	down := errors.New("ledger down")
	var recorded int
	ann := admission.New(g.store, nil, g.rec, nil, admission.WithRedemptions(
		func(ctx context.Context, eventID string, es []booking.OutboxEntry) error {
			if down != nil {
				return down
			}
			recorded += len(es)
			return g.led.RecordRedemptions(ctx, eventID, es)
		}))
	if _, err := ann.SweepOutbox(ctx, g.event, 0); !errors.Is(err, admission.ErrKafkaPending) || !errors.Is(err, down) {
		t.Fatalf("sweep with the ledger down: %v", err)
	}
	if fs := g.rec.Topic(events.TopicCodeRedeemed); len(fs) != 0 || used() != 0 {
		t.Fatalf("published before the ledger recorded: %+v, used %d", fs, used())
	}
	if fs := g.rec.Topic(events.TopicBookingRequest); len(fs) != 1 || fs[0].UserID != "fan0" {
		t.Fatalf("the join without a code is published, the one with a code waits: %+v", fs)
	}

	down = nil
	for range 2 { // the second sweep finds nothing left
		if _, err := ann.SweepOutbox(ctx, g.event, 0); err != nil {
			t.Fatal(err)
		}
	}
	if recorded != 1 || used() != 1 {
		t.Fatalf("recorded %d redemptions, the code used %d times", recorded, used())
	}
	if fs := g.rec.Topic(events.TopicCodeRedeemed); len(fs) != 1 || fs[0].UserID != "fan1" || fs[0].Sequence != res.Sequence ||
		fs[0].Reason != "code_id="+strconv.FormatInt(res.Code.CodeID, 10)+" phase= use=1" {
		t.Fatalf("code_redeemed facts: %+v", fs)
	}
	if fs := g.rec.Topic(events.TopicBookingRequest); len(fs) != 2 || fs[1].UserID != "fan1" {
		t.Fatalf("booking_request facts: %+v", fs)
	}
	if left, err := g.store.Outbox(ctx, g.event, 0); err != nil || len(left) != 0 {
		t.Fatalf("the outbox keeps %+v %v", left, err)
	}
	// a repeat records nothing more
	if err := g.led.RecordRedemptions(ctx, g.event, []booking.OutboxEntry{{Kind: booking.KindJoined, UserID: "fan1",
		Sequence: res.Sequence, At: res.At, Code: *res.Code}}); err != nil || used() != 1 {
		t.Fatalf("a repeat: used %d, %v", used(), err)
	}
}

// addCode records a batch of one code in the ledger and loads it into
// Redis; it returns the code's digest.
func (g *rig) addCode(b *ledger.CodeBatch, code string) string {
	g.t.Helper()
	n, _ := booking.NormaliseCode(code)
	digest := booking.CodeDigest([]byte("ledger test code key"), n)
	if err := g.led.AddCodes(context.Background(), b, []string{digest}, func(ctx context.Context, recs []booking.CodeRecord) error {
		return g.store.LoadCodes(ctx, g.event, recs)
	}); err != nil {
		g.t.Fatal(err)
	}
	return digest
}

// While the ledger cannot record a code's use, the sweep holds back that
// join alone and goes on through the event's outbox: the joins after it,
// in later batches, are published in the same pass, and the ledger is
// asked once.
func TestSweepGoesOnPastAHeldCodeUse(t *testing.T) {
	t.Parallel()
	g, digest := roomTakenWithACode(t, "codeheld")
	ctx := context.Background()
	if _, err := g.store.EnqueueCode(ctx, g.event, "coded", digest); err != nil {
		t.Fatal(err)
	}
	const plain = 1200 // three batches of the sweep after the held join's
	for i := range plain {
		g.join("fan" + strconv.Itoa(i))
	}
	asked := 0
	ann := admission.New(g.store, nil, g.rec, nil, admission.WithRedemptions(
		func(context.Context, string, []booking.OutboxEntry) error { asked++; return errors.New("ledger down") }))
	if _, err := ann.SweepOutbox(ctx, g.event, 0); !errors.Is(err, admission.ErrKafkaPending) {
		t.Fatalf("sweep with the ledger down: %v", err)
	}
	if fs := g.rec.Topic(events.TopicBookingRequest); len(fs) != plain || asked != 1 {
		t.Fatalf("%d of %d joins published in one pass, the ledger asked %d times", len(fs), plain, asked)
	}
	if left, err := g.store.Outbox(ctx, g.event, 0); err != nil || len(left) != 1 || left[0].UserID != "coded" {
		t.Fatalf("left in the outbox: %d entries, %v", len(left), err)
	}
}

// roomTakenWithACode is a rig of event id whose room's one place is
// taken (its join announced), so every join after waits, and the digest
// of a single-use access code of it.
func roomTakenWithACode(t *testing.T, id string) (*rig, string) {
	t.Helper()
	g := newRig(t, booking.EventConfig{ID: id, Name: id, Rows: 1, SeatsPerRow: 5, Capacity: 1})
	digest := g.addCode(&ledger.CodeBatch{EventID: g.event, Uses: 1, Actor: "ops"}, "DDDD-4444")
	if first := g.join("first"); g.store.AckOutbox(context.Background(), g.event, first.Outbox...) != nil {
		t.Fatal("ack")
	}
	return g, digest
}

// closedRegistration is an event whose registration window (phase
// verified) closed with n registrants, fan0 to fan<n-1>, first come
// first.
func closedRegistration(t *testing.T, id string, n int) (*rig, []string) {
	t.Helper()
	g := newRig(t, booking.EventConfig{ID: id, Name: "Registration", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	now := time.Now()
	if _, err := g.led.OpenRegistration(ctx, g.event, "verified", now.Add(-time.Hour), now.Add(time.Hour), "otto"); err != nil {
		t.Fatal(err)
	}
	users := make([]string, n)
	for i := range users {
		users[i] = "fan" + strconv.Itoa(i)
		if _, _, err := g.led.Register(ctx, g.event, users[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.led.OpenRegistration(ctx, g.event, "verified", now.Add(-time.Hour), now.Add(-time.Second), "otto"); err != nil {
		t.Fatal(err)
	}
	return g, users
}

// A draw Redis took in a call whose ledger transaction then rolled back
// (the gateway died between the two) leaves no one selected beyond the
// ledger's draw: the repeat, even with a smaller count, makes Redis's
// selection the one the ledger records and publishes.
func TestRegistrationDrawRepeatedAfterALostOneSelectsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	g, users := closedRegistration(t, "regrepeat", 5)
	ctx := context.Background()
	died := errors.New("connection lost before the commit")
	if _, err := g.led.Draw(ctx, g.event, ledger.SelectFirstCome, 4, "otto", func(ctx context.Context, sel []string) error {
		if err := g.store.MarkSelected(ctx, g.event, sel); err != nil {
			return err
		}
		return died
	}); !errors.Is(err, died) {
		t.Fatalf("lost draw: %v", err)
	}
	d, err := g.led.Draw(ctx, g.event, ledger.SelectFirstCome, 1, "otto", func(ctx context.Context, sel []string) error {
		return g.store.MarkSelected(ctx, g.event, sel)
	})
	if err != nil || !d.Fresh || d.Selected != 1 {
		t.Fatalf("the repeat: %+v %v", d, err)
	}
	if _, _, err := g.store.SetPhase(ctx, g.event, booking.PhaseState{Phase: "verified", Audience: booking.AudienceRegistered}); err != nil {
		t.Fatal(err)
	}
	for i, u := range users {
		_, err := g.store.Enqueue(ctx, g.event, u)
		if i == 0 && err != nil {
			t.Fatalf("the selected fan: %v", err)
		}
		if i > 0 && !errors.Is(err, booking.ErrNotSelected) {
			t.Fatalf("%s, selected only by the lost draw: %v", u, err)
		}
	}
}

// A draw Redis took in a call whose ledger transaction rolled back, not
// repeated, is taken back by the reconciliation: the draw that selects
// who may join is the one the ledger records and publishes, and that one
// stays.
func TestRegistrationDrawLostAndNotRepeatedIsTakenBack(t *testing.T) {
	t.Parallel()
	g, users := closedRegistration(t, "reglost", 3)
	ctx := context.Background()
	if _, _, err := g.store.SetPhase(ctx, g.event, booking.PhaseState{Phase: "verified", Audience: booking.AudienceRegistered}); err != nil {
		t.Fatal(err)
	}
	mark := func(ctx context.Context, sel []string) error { return g.store.MarkSelected(ctx, g.event, sel) }
	died := errors.New("connection lost before the commit")
	if _, err := g.led.Draw(ctx, g.event, ledger.SelectFirstCome, 2, "otto", func(ctx context.Context, sel []string) error {
		if err := mark(ctx, sel); err != nil {
			return err
		}
		return died
	}); !errors.Is(err, died) {
		t.Fatalf("lost draw: %v", err)
	}
	rec, err := g.r.Reconcile(ctx, g.event)
	if err != nil || !rec.SelectionReset {
		t.Fatalf("reconcile after a lost draw: %+v %v", rec, err)
	}
	if _, err := g.store.Enqueue(ctx, g.event, "fan0"); !errors.Is(err, booking.ErrNotSelected) {
		t.Fatalf("selected only by the lost draw: %v", err)
	}
	if _, err := g.led.Draw(ctx, g.event, ledger.SelectFirstCome, 2, "otto", mark); err != nil {
		t.Fatal(err)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || rec.SelectionReset {
		t.Fatalf("reconcile after the recorded draw: %+v %v", rec, err)
	}
	for i, u := range users {
		_, err := g.store.Enqueue(ctx, g.event, u)
		if (i < 2) != (err == nil) {
			t.Fatalf("%s after the recorded draw: %v", u, err)
		}
	}
}
