package booking

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"
)

var testCodeKey = []byte("a test key for access codes")

// loadCode loads one code for the event and returns its digest.
func (f *fixture) loadCode(event, code string, c CodeRecord) string {
	f.t.Helper()
	n, ok := NormaliseCode(code)
	if !ok {
		f.t.Fatalf("code %q does not normalise", code)
	}
	c.Digest = CodeDigest(testCodeKey, n)
	if err := f.s.LoadCodes(f.ctx, event, []CodeRecord{c}); err != nil {
		f.t.Fatalf("load codes: %v", err)
	}
	return c.Digest
}

// redeemAll has n users join at once with the code; it returns how many
// got in and the errors of the others by kind.
func (f *fixture) redeemAll(event, digest, prefix string, n int) (int, map[error]int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, map[error]int{}
	for i := range n {
		wg.Go(func() {
			r, err := f.s.EnqueueCode(f.ctx, event, prefix+strconv.Itoa(i), digest)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && r.Created && r.Code != nil:
				ok++
			case err == nil:
				f.t.Errorf("a join with the code but no redemption: %+v", r)
			default:
				for _, e := range []error{ErrCodeTaken, ErrCodeUsedUp} {
					if errors.Is(err, e) {
						refused[e]++
						return
					}
				}
				f.t.Errorf("join with a code: %v", err)
			}
		})
	}
	wg.Wait()
	return ok, refused
}

// 1,000 concurrent joins with one single-use code: exactly one gets in,
// every other is refused as bound to another user, and the code is
// bound to the one who got in.
func TestCodeSingleUseRace(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "cs", Rows: 10, SeatsPerRow: 10, Capacity: 5})
	d := f.loadCode("cs", NewCode(), CodeRecord{ID: 1, Uses: 1})
	ok, refused := f.redeemAll("cs", d, "fan", 1000)
	if ok != 1 || refused[ErrCodeTaken] != 999 {
		t.Fatalf("single-use code: %d joins got in, refused %v; want 1 and 999 code_taken", ok, refused)
	}
	if c := f.counts("cs"); c.Waiting+c.Active != 1 {
		t.Fatalf("after the race: %+v, want one user placed", c)
	}
}

// A 10-use code is multi-use for one holder: the first user to redeem it
// binds it; only that user's joins use it, exactly ten times.
func TestCodeTenUses(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "ct", Rows: 10, SeatsPerRow: 10, Capacity: 100})
	d := f.loadCode("ct", "club-0001-aaaa", CodeRecord{ID: 7, Uses: 10})
	r, err := f.s.EnqueueCode(f.ctx, "ct", "holder", d)
	if err != nil || r.Code == nil || *r.Code != (CodeUse{CodeID: 7, Use: 1}) || r.State != StateActive {
		t.Fatalf("first redemption: %+v %+v %v", r, r.Code, err)
	}
	if _, err := f.s.EnqueueCode(f.ctx, "ct", "other", d); !errors.Is(err, ErrCodeTaken) {
		t.Fatalf("another user with a bound code: %v, want code_taken", err)
	}
	// joining again while in the room: the entry back, no use taken
	if r, err := f.s.EnqueueCode(f.ctx, "ct", "holder", d); err != nil || r.Created || r.Code != nil {
		t.Fatalf("repeated join: %+v %v", r, err)
	}
	uses := 1
	for range 20 {
		if _, err := f.s.Cancel(f.ctx, "ct", "holder"); err != nil {
			t.Fatalf("cancel: %v", err)
		}
		r, err := f.s.EnqueueCode(f.ctx, "ct", "holder", d)
		if errors.Is(err, ErrCodeUsedUp) {
			break
		}
		if err != nil || r.Code == nil || r.Code.Use != int64(uses+1) {
			t.Fatalf("use %d: %+v %v", uses+1, r, err)
		}
		uses++
	}
	if uses != 10 {
		t.Fatalf("a 10-use code was used %d times", uses)
	}
}

// 1,000 users race for a 10-use code: exactly one of them binds it and
// gets in; concurrent joins of that one user use it at most ten times.
func TestCodeTenUsesRace(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "cr", Rows: 10, SeatsPerRow: 10, Capacity: 100})
	d := f.loadCode("cr", NewCode(), CodeRecord{ID: 2, Uses: 10})
	ok, refused := f.redeemAll("cr", d, "fan", 1000)
	if ok != 1 || refused[ErrCodeTaken] != 999 {
		t.Fatalf("10-use code, 1,000 users: %d got in, refused %v", ok, refused)
	}
}

// Each refusal is its own error and changes nothing: not the code's
// phase, expired, used up, unknown, and none in a code-only phase.
func TestCodeRefusals(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "cx", Rows: 2, SeatsPerRow: 5, Capacity: 10})
	keys := f.s.eventKeys("cx")
	f.rdb.HSet(f.ctx, keys[kConfig], "phase", "fanclub", "audience", "code")
	good := f.loadCode("cx", "GOOD-0000", CodeRecord{ID: 1, Uses: 5, Phase: "fanclub"})
	other := f.loadCode("cx", "OTHER-0000", CodeRecord{ID: 2, Uses: 5, Phase: "general"})
	old := f.loadCode("cx", "OLD-0000", CodeRecord{ID: 3, Uses: 5, Expires: f.clock.Now().Add(-time.Second)})
	spent := f.loadCode("cx", "SPENT-0000", CodeRecord{ID: 4, Uses: 2, Used: 2})
	unknown := CodeDigest(testCodeKey, "NOSUCHCODE")
	before, _ := f.rdb.HGetAll(f.ctx, keys[kCodes]).Result()
	for _, c := range []struct {
		digest string
		want   error
	}{{other, ErrCodeWrongPhase}, {old, ErrCodeExpired}, {spent, ErrCodeUsedUp}, {unknown, ErrInvalidCode}} {
		if _, err := f.s.EnqueueCode(f.ctx, "cx", "fan", c.digest); !errors.Is(err, c.want) {
			t.Errorf("join with %s: %v, want %v", c.digest, err, c.want)
		}
	}
	if _, err := f.s.Enqueue(f.ctx, "cx", "fan"); !errors.Is(err, ErrCodeRequired) {
		t.Errorf("join without a code in a code phase: %v", err)
	}
	after, _ := f.rdb.HGetAll(f.ctx, keys[kCodes]).Result()
	if len(after) != len(before) {
		t.Fatalf("refusals changed the codes: %v → %v", before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("refusals changed %s: %s → %s", k, v, after[k])
		}
	}
	if c := f.counts("cx"); c.Waiting+c.Active != 0 {
		t.Fatalf("refused joins placed users: %+v", c)
	}
	if r, err := f.s.EnqueueCode(f.ctx, "cx", "fan", good); err != nil || r.Code == nil || r.Code.Phase != "fanclub" {
		t.Fatalf("the phase's code: %+v %v", r, err)
	}
}

// A code's seats per order bound its holder's selection below the
// event's max_seats.
func TestCodeSeatLimit(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "cl", Rows: 2, SeatsPerRow: 5, Capacity: 10, MaxSeatsPerOrder: 4})
	d := f.loadCode("cl", NewCode(), CodeRecord{ID: 1, Uses: 1, Seats: 2})
	if _, err := f.s.EnqueueCode(f.ctx, "cl", "fan", d); err != nil {
		t.Fatal(err)
	}
	var tm *TooManySeatsError
	if _, err := f.s.LockSeats(f.ctx, "cl", "fan", []string{"A1", "A2", "A3"}); !errors.As(err, &tm) || tm.Max != 2 {
		t.Fatalf("3 seats with a 2-seat code: %v", err)
	}
	if _, err := f.s.LockSeats(f.ctx, "cl", "fan", []string{"A1", "A2"}); err != nil {
		t.Fatalf("2 seats with a 2-seat code: %v", err)
	}
}

func TestNormaliseCode(t *testing.T) {
	for in, want := range map[string]string{"k7qm-2xrt 9hbd": "K7QM2XRT9HBD", "ABC": "ABC"} {
		if got, ok := NormaliseCode(in); !ok || got != want {
			t.Errorf("NormaliseCode(%q) = %q %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "---", "bad!", "ü123", string(make([]byte, 65))} {
		if _, ok := NormaliseCode(in); ok {
			t.Errorf("NormaliseCode(%q) accepted", in)
		}
	}
	if a, b := NewCode(), NewCode(); a == b || len(a) != 19 {
		t.Errorf("NewCode: %q %q", a, b)
	}
}

// The current phase decides which codes open the sale and, for a code
// audience, that a join needs one; users already queued or in the room
// are left as they are when it changes.
func TestSetPhase(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "ph", Rows: 2, SeatsPerRow: 5, Capacity: 1})
	if e, _ := f.s.GetEvent(f.ctx, "ph"); e.Phase != "" || e.Audience != AudiencePublic {
		t.Fatalf("a new event's phase: %q %q", e.Phase, e.Audience)
	}
	f.join("ph", "early") // in the room
	f.join("ph", "queued")
	club := f.loadCode("ph", "CLUB-0001", CodeRecord{ID: 1, Uses: 1, Phase: "fanclub"})
	prev, changed, err := f.s.SetPhase(f.ctx, "ph", PhaseState{Phase: "fanclub", Audience: AudienceCode})
	if err != nil || !changed || prev != (PhaseState{Audience: AudiencePublic}) {
		t.Fatalf("set phase: %+v %v %v", prev, changed, err)
	}
	if _, changed, err := f.s.SetPhase(f.ctx, "ph", PhaseState{Phase: "fanclub", Audience: AudienceCode}); err != nil || changed {
		t.Fatalf("a repeat: %v %v", changed, err)
	}
	if e, _ := f.s.GetEvent(f.ctx, "ph"); e.Phase != "fanclub" || e.Audience != AudienceCode {
		t.Fatalf("the event's phase: %q %q", e.Phase, e.Audience)
	}
	if f.state("ph", "early") != StateActive || f.state("ph", "queued") != StateWaiting {
		t.Fatal("a phase change moved users already in")
	}
	if _, err := f.s.Enqueue(f.ctx, "ph", "fan"); !errors.Is(err, ErrCodeRequired) {
		t.Fatalf("a join without a code: %v", err)
	}
	if r, err := f.s.EnqueueCode(f.ctx, "ph", "fan", club); err != nil || r.Code == nil || r.Code.Phase != "fanclub" {
		t.Fatalf("the phase's code: %+v %v", r, err)
	}
	// the general sale: open to all, the presale's codes closed
	if prev, _, err := f.s.SetPhase(f.ctx, "ph", PhaseState{Phase: "general", Audience: AudiencePublic}); err != nil || prev.Phase != "fanclub" {
		t.Fatalf("to the general sale: %+v %v", prev, err)
	}
	f.join("ph", "public")
	late := f.loadCode("ph", "CLUB-0002", CodeRecord{ID: 2, Uses: 1, Phase: "fanclub"})
	if _, err := f.s.EnqueueCode(f.ctx, "ph", "latecomer", late); !errors.Is(err, ErrCodeWrongPhase) {
		t.Fatalf("a presale code in the general sale: %v", err)
	}
	for _, p := range []PhaseState{{Phase: "x", Audience: "nobody"}, {Phase: "a b", Audience: AudiencePublic}} {
		if _, _, err := f.s.SetPhase(f.ctx, "ph", p); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("phase %+v: %v", p, err)
		}
	}
	if _, _, err := f.s.SetPhase(f.ctx, "nope", PhaseState{Audience: AudiencePublic}); !errors.Is(err, ErrEventNotFound) {
		t.Errorf("unknown event: %v", err)
	}
}
