package ledger_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

// chained returns entries from..to of a chain of "e".
func chained(from, to int64) []fairness.Entry {
	var out []fairness.Entry
	prev := fairness.Genesis("e")
	for i := int64(1); i <= to; i++ {
		e := fairness.Entry{Index: i, Seq: i, UserHash: "u" + strconv.FormatInt(i, 10), AtMs: 1000 + i, Reason: fairness.ReasonPromoted, Prev: prev}
		e.Hash = fairness.Link(prev, e.Line())
		prev = e.Hash
		if i >= from {
			out = append(out, e)
		}
	}
	return out
}

// The admission log's record: pages recorded again change nothing, a
// page that does not follow the record or rewrites it is refused, and a
// rebuild's start is the last recorded entry with the first salt.
func TestRecordAdmissions(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.New(t)
	if s, err := l.AdmissionLogStart(ctx, "e"); err != nil || s != (booking.LogStart{}) {
		t.Fatalf("nothing recorded: %+v %v", s, err)
	}
	all := chained(1, 30)
	if err := l.RecordAdmissions(ctx, "e", "salt", all[:20]); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordAdmissions(ctx, "e", "another salt", all[10:20]); err != nil {
		t.Fatalf("a page recorded again: %v", err)
	}
	if err := l.RecordAdmissions(ctx, "e", "salt", all[25:]); !errors.Is(err, ledger.ErrLogGap) {
		t.Fatalf("entries after a gap: %v", err)
	}
	forked := slices.Clone(all[15:25])
	forked[0].AtMs++
	prev := forked[0].Prev
	for i := range forked {
		forked[i].Prev = prev
		forked[i].Hash = fairness.Link(prev, forked[i].Line())
		prev = forked[i].Hash
	}
	if err := l.RecordAdmissions(ctx, "e", "salt", forked); !errors.Is(err, ledger.ErrLogForked) {
		t.Fatalf("a rewritten page: %v", err)
	}
	if err := l.RecordAdmissions(ctx, "e", "salt", all[20:]); err != nil {
		t.Fatal(err)
	}
	got, err := l.Admissions(ctx, "e", 5, 100)
	if err != nil || !slices.Equal(got, all[5:]) {
		t.Fatalf("entries after 5: %d %v", len(got), err)
	}
	s, err := l.AdmissionLogStart(ctx, "e")
	if err != nil || s != (booking.LogStart{Size: 30, Head: all[29].Hash, Salt: "salt"}) {
		t.Fatalf("start %+v %v", s, err)
	}
	if other, err := l.AdmissionLogStart(ctx, "other"); err != nil || other != (booking.LogStart{}) {
		t.Fatalf("another event: %+v %v", other, err)
	}
}
