package booking

import (
	"slices"
	"testing"
	"time"
)

// TestReplyScan: scan decodes the values after the code into named fields
// by type, skips nil destinations and leaves missing ones alone.
func TestReplyScan(t *testing.T) {
	r := reply{"ok", "waiting", int64(7), "12", int64(1), int64(1_800_000_000_000), "ignored",
		[]any{"A1", int64(2)}, "completed"}
	var (
		st       State
		seq, pos int64
		created  bool
		at       time.Time
		seats    []string
		out      Outcome
		extra    = "unchanged"
	)
	r.scan(&st, &seq, &pos, &created, &at, nil, &seats, &out, &extra)
	if st != StateWaiting || seq != 7 || pos != 12 || !created || !at.Equal(time.UnixMilli(1_800_000_000_000)) ||
		!slices.Equal(seats, []string{"A1", "2"}) || out != OutcomeCompleted || extra != "unchanged" {
		t.Fatalf("%v %d %d %v %v %v %v %q", st, seq, pos, created, at, seats, out, extra)
	}
	var zero time.Time
	reply{"ok", int64(0)}.scan(&zero)
	if !zero.IsZero() {
		t.Fatalf("0 ms decoded as %v, want the zero time", zero)
	}
	var none []string
	reply{"ok", []any{}}.scan(&none)
	if none != nil {
		t.Fatalf("empty array decoded as %#v, want nil", none)
	}
}

func TestReplyRecords(t *testing.T) {
	var got []string
	reply{"a", int64(1), "b", int64(2), "c"}.records(2, func(rec reply) {
		var u string
		var n int64
		rec.values(&u, &n)
		got = append(got, u+":"+rec.str(1))
	})
	if !slices.Equal(got, []string{"a:1", "b:2"}) {
		t.Fatalf("records: %v (an incomplete last record is skipped)", got)
	}
}

// BenchmarkReplyDecode: decoding get_position's reply by scan against
// reading each element by position, the way the Store did before scan.
func BenchmarkReplyDecode(b *testing.B) {
	r := reply{"ok", "waiting", int64(7), int64(3), "", "", int64(0), int64(0), int64(4), int64(3), int64(120), int64(0),
		int64(1_800_000_000_000)}
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			var st Status
			r.scan(&st.State, &st.Sequence, &st.Position, &st.SeatID, &st.PaymentID, &st.ExpireAt, &st.SoldOut,
				&st.Counts.Served, &st.Counts.Waiting, &st.Counts.AdmittedLastMinute, &st.AdmitPerMinute, &st.SalesStart)
			if st.Position != 3 {
				b.Fatal(st)
			}
		}
	})
	b.Run("positional", func(b *testing.B) {
		for b.Loop() {
			st := Status{State: State(r.str(1)), Sequence: r.int(2), Position: r.int(3),
				SeatID: r.str(4), PaymentID: r.str(5), ExpireAt: ms(r.int(6)), SoldOut: r.int(7) == 1, AdmitPerMinute: r.int(11), SalesStart: ms(r.int(12)),
				Counts: Counts{Served: r.int(8), Waiting: r.int(9), AdmittedLastMinute: r.int(10)}}
			if st.Position != 3 {
				b.Fatal(st)
			}
		}
	})
}
