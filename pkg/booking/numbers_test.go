package booking

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rebuilt restores event id with its join sequences starting at base
// (a rebuild from the ledger: now_ms × 1000, pkg/ledger) and returns base.
func (f *fixture) rebuilt(cfg EventConfig) int64 {
	f.t.Helper()
	def, err := NormalizeEvent(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	base := f.clock.Now().UnixMilli() * 1000
	res, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: def, SeqBase: base})
	if err != nil || res.SeqBase != base {
		f.t.Fatalf("restore: %+v %v", res, err)
	}
	if err := f.s.AckOutbox(f.ctx, cfg.ID, res.Restored); err != nil {
		f.t.Fatal(err)
	}
	return base
}

// luaText is how Redis's Lua writes n with .. or tostring (%.14g).
func (f *fixture) luaText(n int64) string {
	f.t.Helper()
	s, err := f.rdb.Eval(f.ctx, "return tostring(tonumber(ARGV[1]))", nil, n).Text()
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// TestRebuiltEventWritesWholeSequences: on an event whose sequences are
// above 10^14, every place a sequence is written (outbox fields and
// values, useq, the payment registry, the served counter) holds the
// whole decimal integer, and every reply carries it.
func TestRebuiltEventWritesWholeSequences(t *testing.T) {
	f := newFixture(t)
	f.clock.Set(time.UnixMilli(1_795_811_857_885))
	base := f.rebuilt(EventConfig{ID: "evt", Rows: 1, SeatsPerRow: 4, Capacity: 2, Hold: time.Minute, Abandon: 30 * time.Second})
	for i, u := range []string{"a", "b", "c", "d", "e"} {
		if j := f.join("evt", u); j.Sequence != base+int64(i)+1 {
			t.Fatalf("join %s: sequence %d, want %d", u, j.Sequence, base+int64(i)+1)
		}
	}
	// a pays; b's hold expires; c cancels in the queue; d is dropped for
	// absence; e is admitted and cancels in the room
	f.buy("evt", "a", "A1")
	if _, err := f.s.LockSeat(f.ctx, "evt", "b", "A2"); err != nil {
		t.Fatal(err)
	}
	if c, err := f.s.Cancel(f.ctx, "evt", "c"); err != nil || c.Sequence != base+3 {
		t.Fatalf("cancel c: %+v %v", c, err)
	}
	f.clock.Advance(time.Minute + time.Second)
	if err := f.s.Touch(f.ctx, "evt", "e"); err != nil {
		t.Fatal(err)
	}
	p, err := f.s.Promote(f.ctx, "evt", 0)
	if err != nil || len(p.Expired) != 1 || p.Expired[0].Sequence != base+2 ||
		len(p.Promoted) != 1 || p.Promoted[0].Sequence != base+5 || !cmp.Equal(p.Abandoned, []string{"d"}) {
		t.Fatalf("promote: %+v %v", p, err)
	}
	if c, err := f.s.Cancel(f.ctx, "evt", "e"); err != nil || c.Sequence != base+5 || c.From != "active" {
		t.Fatalf("cancel e: %+v %v", c, err)
	}

	k := f.s.eventKeys("evt")
	out, _ := f.rdb.HGetAll(f.ctx, k[kOutbox]).Result()
	useq, _ := f.rdb.HGetAll(f.ctx, k[kUseq]).Result()
	pays, _ := f.rdb.HGetAll(f.ctx, k[kPays]).Result()
	served, _ := f.rdb.HGet(f.ctx, k[kConfig], "served").Result()
	seq, _ := f.rdb.Get(f.ctx, k[kSeq]).Result()
	for name, m := range map[string]map[string]string{"outbox": out, "useq": useq, "pays": pays,
		"config served": {"served": served}, "seq": {"seq": seq}} {
		for field, v := range m {
			if strings.Contains(field, "e+") || strings.Contains(v, "e+") {
				t.Errorf("%s: %q = %q: a number in exponent form", name, field, v)
			}
		}
	}
	s := func(n int64) string { return strconv.FormatInt(base+n, 10) }
	want := map[string]string{"a": s(1), "b": s(2), "c": s(3), "d": s(4), "e": s(5)}
	if diff := cmp.Diff(want, useq); diff != "" {
		t.Errorf("useq (-want +got):\n%s", diff)
	}
	if v := pays["pay-a"]; !strings.HasPrefix(v, "a|"+s(1)+"|A1|completed|") {
		t.Errorf("payment registry: %q", v)
	}
	if served != s(5) || seq != s(5) {
		t.Errorf("served %q, seq %q, want %s", served, seq, s(5))
	}
	entries, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, e := range entries {
		got[string(e.Kind)+" "+e.UserID] = e.Sequence - base
	}
	wantEntries := map[string]int64{
		"joined a": 1, "joined b": 2, "joined c": 3, "joined d": 4, "joined e": 5,
		"promoted a": 1, "promoted b": 2, "expired b": 2, "cancelled c": 3, "cancelled d": 4,
		"promoted e": 5, "cancelled e": 5,
	}
	if diff := cmp.Diff(wantEntries, got); diff != "" {
		t.Errorf("outbox entries' sequences above the base (-want +got):\n%s", diff)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", entries...); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.rdb.HLen(f.ctx, k[kOutbox]).Result(); n != 0 {
		t.Errorf("%d outbox entries left after acknowledging all", n)
	}
	ev, err := f.s.GetEvent(f.ctx, "evt")
	if err != nil || ev.Counts.Served != base+5 {
		t.Errorf("served %d, want %d (%v)", ev.Counts.Served, base+5, err)
	}
}

// TestOutboxMendsEntriesInExponentForm: expiries and cancellations an
// earlier version wrote with the sequence in Lua's exponent form are
// rewritten under their exact sequence while the user's record still
// names that hold, and handed out as unreadable (to be logged and
// removed) when it no longer does.
func TestOutboxMendsEntriesInExponentForm(t *testing.T) {
	f := newFixture(t)
	f.clock.Set(time.UnixMilli(1_795_811_857_885))
	base := f.rebuilt(EventConfig{ID: "evt", Rows: 1, SeatsPerRow: 4, Capacity: 3, Hold: time.Minute})
	for _, u := range []string{"a", "b", "c", "d"} {
		f.join("evt", u)
	}
	if _, err := f.s.LockSeat(f.ctx, "evt", "a", "A1"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute + time.Second)
	x, err := f.s.HandleTimeout(f.ctx, "evt", "a")
	if err != nil || x.Outcome != OutcomeReleased {
		t.Fatalf("timeout: %+v %v", x, err)
	}
	for _, u := range []string{"b", "c"} {
		if _, err := f.s.Cancel(f.ctx, "evt", u); err != nil {
			t.Fatal(err)
		}
	}
	// (d waits: the room of 3 was full with a, b and c)
	k := f.s.eventKeys("evt")
	all, _ := f.s.Outbox(f.ctx, "evt", 0)
	if err := f.s.AckOutbox(f.ctx, "evt", all...); err != nil {
		t.Fatal(err)
	}
	// the entries as the previous scripts wrote them
	old := map[string]string{}
	for u, n := range map[string]int64{"a": 1, "b": 2, "c": 3} {
		e := f.luaText(base + n)
		if u == "a" {
			old["x:"+e+":a"] = e + "|" + strconv.FormatInt(x.ExpireAt.UnixMilli(), 10) + "|A1|" + strconv.FormatInt(f.clock.Now().UnixMilli(), 10)
		} else {
			old["c:"+e+":"+u] = e + "|active||" + strconv.FormatInt(f.clock.Now().UnixMilli(), 10)
		}
	}
	if !strings.Contains(f.luaText(base+1), "e+15") {
		t.Fatalf("Lua writes %d as %q, not in exponent form: nothing to mend", base+1, f.luaText(base+1))
	}
	if err := f.rdb.HSet(f.ctx, k[kOutbox], old).Err(); err != nil {
		t.Fatal(err)
	}
	// c joins again: the old cancellation no longer matches c's record
	f.join("evt", "c")

	entries, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil {
		t.Fatal(err)
	}
	var mended []string
	var unreadable []OutboxEntry
	for _, e := range entries {
		switch e.Kind {
		case KindUnreadable:
			unreadable = append(unreadable, e)
		case KindExpired, KindCancelled:
			mended = append(mended, string(e.Kind)+" "+e.UserID+" "+strconv.FormatInt(e.Sequence-base, 10))
		}
	}
	if !cmp.Equal(mended, []string{"expired a 1", "cancelled b 2"}) {
		t.Fatalf("mended %v in %+v", mended, entries)
	}
	if len(unreadable) != 1 || !strings.HasPrefix(unreadable[0].Field, "c:") || !strings.HasSuffix(unreadable[0].Field, ":c") {
		t.Fatalf("unreadable %+v, want c's old cancellation", unreadable)
	}
	for field := range old {
		if strings.HasPrefix(field, "c:") && strings.HasSuffix(field, ":c") {
			continue
		}
		if ok, _ := f.rdb.HExists(f.ctx, k[kOutbox], field).Result(); ok {
			t.Errorf("%s still in the outbox", field)
		}
	}
	if v, _ := f.rdb.HGet(f.ctx, k[kOutbox], outboxField('x', base+1, "a")).Result(); !strings.HasPrefix(v, strconv.FormatInt(base+1, 10)+"|") {
		t.Errorf("a's expiry under its exact sequence: %q", v)
	}
	// acknowledging the unreadable entry removes it
	if err := f.s.AckOutbox(f.ctx, "evt", entries...); err != nil {
		t.Fatal(err)
	}
	if left, _ := f.s.Outbox(f.ctx, "evt", 0); len(left) != 0 {
		t.Fatalf("left %+v", left)
	}
}

// TestPaymentRecordInExponentForm: a payment registered by an earlier
// version with the sequence in exponent form completes with the exact
// sequence (the user's hold is still that payment's), and the record is
// written whole.
func TestPaymentRecordInExponentForm(t *testing.T) {
	f := newFixture(t)
	f.clock.Set(time.UnixMilli(1_795_811_857_885))
	base := f.rebuilt(EventConfig{ID: "evt", Rows: 1, SeatsPerRow: 4, Capacity: 3, Hold: time.Minute})
	for _, u := range []string{"a", "b", "c"} {
		f.join("evt", u)
	}
	if _, err := f.s.LockSeat(f.ctx, "evt", "c", "A3"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "c", "pay-c"); err != nil {
		t.Fatal(err)
	}
	k := f.s.eventKeys("evt")
	at := strconv.FormatInt(f.clock.Now().UnixMilli(), 10)
	if err := f.rdb.HSet(f.ctx, k[kPays], "pay-c", "c|"+f.luaText(base+3)+"|A3|pending|"+at).Err(); err != nil {
		t.Fatal(err)
	}
	r, err := f.s.PaymentSuccess(f.ctx, "evt", "c", "pay-c")
	if err != nil || r.Outcome != OutcomeCompleted || r.Sequence != base+3 {
		t.Fatalf("success: %+v %v, want completed with sequence %d", r, err, base+3)
	}
	if v, _ := f.rdb.HGet(f.ctx, k[kPays], "pay-c").Result(); !strings.HasPrefix(v, "c|"+strconv.FormatInt(base+3, 10)+"|A3|completed|") {
		t.Fatalf("record %q", v)
	}
}

// TestRestoreRefusesSequencesLuaCannotHold: Lua numbers are exact only up
// to 2^53, so a sequence base or sold seat's sequence above is refused.
func TestRestoreRefusesSequencesLuaCannotHold(t *testing.T) {
	f := newFixture(t)
	def, err := NormalizeEvent(EventConfig{ID: "evt", Rows: 1, SeatsPerRow: 2, Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []RestoreInput{
		{Config: def, SeqBase: MaxSeqBase + 1},
		{Config: def, SeqBase: -1},
		{Config: def, Sold: []SoldSeat{{UserID: "u", SeatID: "A1", PaymentID: "p", Sequence: MaxSequence + 1}}},
	} {
		if _, err := f.s.RestoreEvent(f.ctx, in); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("restore %+v: %v, want ErrInvalidArgument", in.SeqBase, err)
		}
	}
	res, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: def, SeqBase: MaxSeqBase})
	if err != nil || res.SeqBase != MaxSeqBase {
		t.Fatalf("restore at the largest base: %+v %v", res, err)
	}
	j := f.join("evt", "u")
	if j.Sequence != MaxSeqBase+1 || j.Outbox[0].Sequence != MaxSeqBase+1 {
		t.Fatalf("join after the largest base: %+v", j)
	}
}
