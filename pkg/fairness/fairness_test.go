package fairness

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"
)

// memSource is an admission log in memory, as the alog list holds it.
type memSource struct {
	raw  []string
	base int64  // entries before raw (archived)
	head string // the hash of entry base
}

func (m *memSource) AdmissionLogStart(context.Context, string) (int64, string, error) {
	return m.base, m.head, nil
}

// memArchive is archived entries in memory.
type memArchive []Entry

func (a memArchive) Admissions(_ context.Context, _ string, after, count int64) ([]Entry, error) {
	end := min(after+count, int64(len(a)))
	if after >= end {
		return nil, nil
	}
	return a[after:end], nil
}

func (m *memSource) FairSalt(context.Context, string) (string, error) { return "salt", nil }
func (m *memSource) AdmissionLogLen(context.Context, string) (int64, error) {
	return int64(len(m.raw)), nil
}
func (m *memSource) AdmissionLog(_ context.Context, _ string, start, count int64) ([]string, error) {
	end := min(start+count, int64(len(m.raw)))
	if start >= end {
		return nil, nil
	}
	return m.raw[start:end], nil
}

// Any page, from any index, continues the one chain; full pages are
// PageSize long; a log that shrank (Redis rebuilt) starts again.
func TestLogPages(t *testing.T) {
	src := &memSource{}
	for i := range 2500 {
		src.raw = append(src.raw, strconv.Itoa(i+1)+"|1700000000000|promoted|user"+strconv.Itoa(i))
	}
	l := NewLog(src, nil)
	ctx := context.Background()
	var all []Entry
	for after := int64(0); ; {
		p, err := l.Page(ctx, "e", after)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Entries...)
		if len(p.Entries) < PageSize {
			if p.Size != 2500 || p.Head != all[len(all)-1].Hash {
				t.Fatalf("size %d head %s", p.Size, p.Head)
			}
			break
		}
		after += PageSize
	}
	if _, err := CheckChain(Genesis("e"), 0, all); err != nil || len(all) != 2500 {
		t.Fatalf("%d entries: %v", len(all), err)
	}
	for _, after := range []int64{1, 999, 1000, 1001, 1999, 2499, 2500, 9999} {
		p, err := l.Page(ctx, "e", after)
		if err != nil {
			t.Fatal(err)
		}
		want := all[min(after, 2500):min(after+PageSize, 2500)]
		if !slices.Equal(p.Entries, want) {
			t.Fatalf("after %d: %d entries, not the chain's", after, len(p.Entries))
		}
	}
	if all[0].UserHash != UserHash("salt", "user0") || all[0].Seq != 1 || all[0].Reason != ReasonPromoted {
		t.Fatalf("entry 1: %+v", all[0])
	}
	src.raw = src.raw[:10]
	p, err := l.Page(ctx, "e", 0)
	if err != nil || p.Size != 10 || !slices.Equal(p.Entries, all[:10]) {
		t.Fatalf("after a rebuild: %d %v", p.Size, err)
	}
}

// A log whose list starts after archived entries (an event rebuilt from
// the ledger) serves pages across the boundary as one chain: the
// archive's entries, then the list's continuing from the archived head.
func TestLogContinuesTheArchive(t *testing.T) {
	ctx := context.Background()
	whole := &memSource{}
	for i := range 3700 {
		whole.raw = append(whole.raw, strconv.Itoa(i+1)+"|1700000000000|promoted|user"+strconv.Itoa(i))
	}
	var all []Entry
	for after := int64(0); after < 3700; after += PageSize {
		p, err := NewLog(whole, nil).Page(ctx, "e", after)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Entries...)
	}
	const base = 1500
	rebuilt := &memSource{raw: whole.raw[base:], base: base, head: all[base-1].Hash}
	l := NewLog(rebuilt, memArchive(all[:base]))
	for _, after := range []int64{0, 499, 500, 999, 1000, 1499, 1500, 1501, 2000, 2500, 3699, 3700} {
		p, err := l.Page(ctx, "e", after)
		if err != nil {
			t.Fatal(err)
		}
		want := all[after:min(after+PageSize, 3700)]
		if !slices.Equal(p.Entries, want) || p.Size != 3700 || p.Head != all[3699].Hash {
			t.Fatalf("after %d: %d entries (size %d), not the chain's", after, len(p.Entries), p.Size)
		}
	}
	if _, err := NewLog(rebuilt, memArchive(all[:base-1])).Page(ctx, "e", 1000); err == nil {
		t.Fatal("a page the archive does not hold was served")
	}
}

type fakeSigner struct{ n int }

func (f *fakeSigner) SignLogHead(_ string, size int64, head string, _ time.Time) (string, error) {
	f.n++
	return strconv.FormatInt(size, 10) + ":" + head, nil
}

// A signed head is reused until it is HeadMaxAge old.
func TestSignedHeadAge(t *testing.T) {
	src := &memSource{raw: []string{"1|5|joined|a"}}
	l := NewLog(src, nil)
	s := &fakeSigner{}
	now := time.Unix(1_800_000_000, 0)
	clock := func(context.Context, string) (time.Time, error) { return now, nil }
	d, err := l.Doc(context.Background(), "e", 0, s, clock)
	if err != nil || d.SignedHead == "" || d.Size != 1 || d.Full {
		t.Fatalf("%+v %v", d, err)
	}
	src.raw = append(src.raw, "2|6|promoted|b")
	now = now.Add(HeadMaxAge - time.Millisecond)
	if d2, _ := l.Doc(context.Background(), "e", 0, s, clock); d2.SignedHead != d.SignedHead || s.n != 1 || d2.Size != 2 {
		t.Fatalf("re-signed early: %+v (%d signatures)", d2, s.n)
	}
	now = now.Add(time.Millisecond)
	if d3, _ := l.Doc(context.Background(), "e", 0, s, clock); s.n != 2 || d3.SignedHead[:2] != "2:" {
		t.Fatalf("not re-signed at HeadMaxAge: %+v", d3)
	}
}

// ParseRaw refuses what the scripts never write.
func TestParseRaw(t *testing.T) {
	for _, bad := range []string{"", "1|2|x", "a|2|x|u", "1|b|x|u"} {
		if _, _, _, _, err := ParseRaw(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	seq, at, reason, user, err := ParseRaw("7|8|joined|u|v")
	if err != nil || seq != 7 || at != 8 || reason != "joined" || user != "u|v" {
		t.Fatalf("%d %d %s %s %v", seq, at, reason, user, err)
	}
}

// memCursor is a hand-on cursor in memory.
type memCursor struct{ n int64 }

func (m *memCursor) AdmissionLogPublished(context.Context, string) (int64, error) { return m.n, nil }
func (m *memCursor) SetAdmissionLogPublished(_ context.Context, _ string, n int64) error {
	m.n = n
	return nil
}

// With Recorded, a signed head covers only the recorded entries: before
// the list's start (the archive's), inside it, none at all.
func TestSignedHeadCoversTheRecord(t *testing.T) {
	ctx := context.Background()
	whole := &memSource{}
	for i := range 2500 {
		whole.raw = append(whole.raw, strconv.Itoa(i+1)+"|1700000000000|promoted|user"+strconv.Itoa(i))
	}
	var all []Entry
	for after := int64(0); after < 2500; after += PageSize {
		p, err := NewLog(whole, nil).Page(ctx, "e", after)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Entries...)
	}
	rebuilt := &memSource{raw: whole.raw[1200:], base: 1200, head: all[1199].Hash}
	for _, tc := range []struct {
		src      *memSource
		recorded int64
	}{{whole, 0}, {whole, 1}, {whole, 1000}, {whole, 1001}, {whole, 2499}, {whole, 2500}, {whole, 9999},
		{rebuilt, 700}, {rebuilt, 1200}, {rebuilt, 2100}} {
		l := NewLog(tc.src, memArchive(all[:1200]))
		l.Recorded = &memCursor{tc.recorded}
		tok, err := l.SignedHead(ctx, "e", &fakeSigner{}, time.Now(), 0)
		n := min(tc.recorded, 2500)
		want := strconv.FormatInt(n, 10) + ":" + Genesis("e")
		if n > 0 {
			want = strconv.FormatInt(n, 10) + ":" + all[n-1].Hash
		}
		if err != nil || tok != want {
			t.Fatalf("recorded %d (base %d): %q %v, want %q", tc.recorded, tc.src.base, tok, err, want)
		}
	}
}
