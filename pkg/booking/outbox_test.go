package booking

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOutbox(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2, Hold: time.Minute})
	a := f.join("evt", "a")
	f.clock.Advance(10 * time.Second)
	b := f.join("evt", "b")
	all, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(a.Outbox, b.Outbox...), all); diff != "" {
		t.Fatalf("outbox (-want +got):\n%s", diff)
	}
	old, _ := f.s.Outbox(f.ctx, "evt", 5*time.Second)
	if diff := cmp.Diff(a.Outbox, old); diff != "" {
		t.Fatalf("stale entries (-want +got):\n%s", diff)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", a.Outbox...); err != nil {
		t.Fatal(err)
	}
	// a changed entry (b cancelled, joined again and was re-admitted) is not
	// removed by an ack of the old one
	bc, _ := f.s.Cancel(f.ctx, "evt", "b")
	f.clock.Advance(time.Second)
	b2 := f.join("evt", "b")
	// each join of b has its own joined entry (booking_request per sequence)
	var joins []int64
	all, _ = f.s.Outbox(f.ctx, "evt", 0)
	for _, e := range all {
		if e.Kind == KindJoined && e.UserID == "b" {
			joins = append(joins, e.Sequence)
		}
	}
	if !cmp.Equal(joins, []int64{2, 3}) {
		t.Fatalf("b's joined entries: %v in %+v", joins, all)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", append(b.Outbox, bc.Outbox...)...); err != nil {
		t.Fatal(err)
	}
	left, _ := f.s.Outbox(f.ctx, "evt", 0)
	if diff := cmp.Diff(b2.Outbox, left); diff != "" {
		t.Fatalf("after acks (-want +got):\n%s", diff)
	}
	// expiries reclaimed by a promotion are in the outbox too
	f.clock.Advance(time.Minute)
	p, _ := f.s.Promote(f.ctx, "evt", 0)
	left, _ = f.s.Outbox(f.ctx, "evt", 0)
	// a's and b's expiries, plus b's second join and admission never acked
	if len(p.Outbox) != 2 || p.Outbox[0].Kind != KindExpired || len(left) != 4 {
		t.Fatalf("promote outbox %+v, outbox %+v", p.Outbox, left)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", left...); err != nil {
		t.Fatal(err)
	}
	if left, _ = f.s.Outbox(f.ctx, "evt", 0); len(left) != 0 {
		t.Fatalf("outbox not empty: %+v", left)
	}
}

// TestOutboxReadBounded: a backlog larger than OutboxReadMax (a long Kafka
// outage during an on-sale) is read in bounded steps, oldest sequences
// first, and drains completely by repeated sweeps.
func TestOutboxReadBounded(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1})
	key := f.s.eventKeys("evt")[kOutbox]
	n := OutboxReadMax + 500
	at := f.clock.Now().UnixMilli()
	pipe := f.rdb.Pipeline()
	for seq := 1; seq <= n; seq++ {
		pipe.HSet(f.ctx, key, fmt.Sprintf("j:%d", seq), fmt.Sprintf("%d|u%d||%d", seq, seq, at))
	}
	if _, err := pipe.Exec(f.ctx); err != nil {
		t.Fatal(err)
	}
	first, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil || len(first) != OutboxReadMax {
		t.Fatalf("first read: %d entries, %v", len(first), err)
	}
	for i := 1; i < len(first); i++ {
		if first[i].Sequence <= first[i-1].Sequence {
			t.Fatalf("not in sequence order at %d: %d after %d", i, first[i].Sequence, first[i-1].Sequence)
		}
	}
	if first[0].Kind != KindJoined || first[0].UserID != fmt.Sprintf("u%d", first[0].Sequence) {
		t.Fatalf("parsed %+v", first[0])
	}
	total := 0
	for batch := first; len(batch) > 0; batch, err = f.s.Outbox(f.ctx, "evt", 0) {
		if err != nil {
			t.Fatal(err)
		}
		total += len(batch)
		if err := f.s.AckOutbox(f.ctx, "evt", batch...); err != nil {
			t.Fatal(err)
		}
	}
	if total != n {
		t.Fatalf("drained %d entries, want %d", total, n)
	}
}

// An entry's field and value are the stored strings the scripts compare
// byte for byte: what joining the parts with + gives, for every kind.
func TestOutboxFieldsAndValues(t *testing.T) {
	at, dl := time.UnixMilli(1_800_000_000_123), time.UnixMilli(1_800_000_600_456)
	kinds := []OutboxKind{KindJoined, KindPromoted, KindExpired, KindCancelled, KindRestored, KindWaitlisted,
		KindOffered, KindOfferEnded, KindUnreadable, "unknown"}
	for _, k := range kinds {
		for _, e := range []OutboxEntry{
			{Kind: k, UserID: "u1", Sequence: 7, At: at},
			{Kind: k, UserID: "user-" + strings.Repeat("x", 120), Sequence: 1 << 50, ExpireAt: dl, SeatID: "A1,B2",
				From: "active", Reason: "seats=3 sold=1", At: at, RabbitDone: true},
			{Kind: k, UserID: "u2", Sequence: 0, At: time.Time{}, KafkaDone: true, LegacyKey: true, Field: "f", Value: "v"},
			{Kind: k, UserID: "u3", Sequence: 3, ExpireAt: dl, At: at, RabbitDone: true, KafkaDone: true},
		} {
			ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
			var field, d string
			var c byte
			switch k {
			case KindUnreadable:
				field = e.Field
			case KindJoined:
				field, d = "j:"+strconv.FormatInt(e.Sequence, 10), e.UserID
			case KindRestored:
				field, d = "r:"+strconv.FormatInt(e.Sequence, 10), e.Reason
			case KindExpired:
				c = 'x'
				if !e.ExpireAt.IsZero() {
					d = ms(e.ExpireAt)
				}
			case KindCancelled:
				c, d = 'c', e.From
			case KindWaitlisted:
				c, d = 'w', e.From
			case KindOffered:
				c, d = 'o', ms(e.ExpireAt)
			case KindOfferEnded:
				c, d = 'e', e.From
			case KindPromoted:
				c, d = 'p', ms(e.ExpireAt)
			default:
				c = 'p'
			}
			if c != 0 {
				field = string(c) + ":" + strconv.FormatInt(e.Sequence, 10) + ":" + e.UserID
				if e.LegacyKey {
					field = string(c) + ":" + e.UserID
				}
			}
			value := strconv.FormatInt(e.Sequence, 10) + "|" + d + "|" + e.SeatID + "|" + ms(e.At)
			if e.RabbitDone != e.KafkaDone {
				value += map[bool]string{true: "|r", false: "|k"}[e.RabbitDone]
			}
			if k == KindUnreadable {
				value = e.Value
			}
			if got := e.field(); got != field {
				t.Errorf("%s field %q, want %q", k, got, field)
			}
			if got := e.value(); got != value {
				t.Errorf("%s value %q, want %q", k, got, value)
			}
		}
	}
}

// ack_outbox reads a call's entries at once but settles them one at a
// time, in order: an entry of a field an earlier one in the same call
// rewrote is compared with the rewritten value.
func TestAckOutboxSettlesInOrder(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1})
	key := f.s.eventKeys("evt")[kOutbox]
	if err := f.rdb.HSet(f.ctx, key, "j:1", "v1", "j:2", "w1").Err(); err != nil {
		t.Fatal(err)
	}
	// j:1: v1 → v2, then v2 → removed; j:2: w0 (stale) is not removed
	res, err := f.s.run(f.ctx, scriptAckOutbox, "evt", "j:1", "v1", "v2", "j:1", "v2", "", "j:2", "w0", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res); got != "[ok 2]" {
		t.Fatalf("reply %s, want [ok 2]", got)
	}
	left, _ := f.rdb.HGetAll(f.ctx, key).Result()
	if !cmp.Equal(left, map[string]string{"j:2": "w1"}) {
		t.Fatalf("outbox after the ack: %v", left)
	}
}

// A joined entry carries its access code's use ("id:use:phase", the phase
// last since it may hold ':') and reads back as written; a malformed use
// makes the entry unreadable rather than a join without a code.
func TestJoinedEntryCarriesItsCodeUse(t *testing.T) {
	e := OutboxEntry{Kind: KindJoined, UserID: "fan", Sequence: 12, At: time.UnixMilli(1_800_000_000_123),
		Code: CodeUse{CodeID: 7, Use: 2, Phase: "fan:club"}}
	if f, v := e.field(), e.value(); f != "j:12" || v != "12|fan|7:2:fan:club|1800000000123" {
		t.Fatalf("written as %q = %q", f, v)
	}
	got, ok := parseOutbox(e.field(), e.value())
	if !ok || got != e {
		t.Fatalf("read back %+v %v", got, ok)
	}
	for _, bad := range []string{"7", "7:x:p", "0:1:", "x:1:", "7:0:"} {
		if _, ok := parseOutbox("j:12", "12|fan|"+bad+"|1800000000123"); ok {
			t.Errorf("code part %q read as valid", bad)
		}
	}
}
