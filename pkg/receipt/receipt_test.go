package receipt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/receipt"
)

// keys returns a signer and its JWKS document.
func keys(t testing.TB, kid string) (*pass.Signer, []byte) {
	t.Helper()
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	ks, err := pass.ParseKeys([]string{kid + ":" + base64.RawURLEncoding.EncodeToString(seed)})
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := ks.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	return pass.NewSigner(ks, "bo"), jwks
}

func joins(event string, n int, at time.Time) []receipt.Join {
	js := make([]receipt.Join, n)
	for i := range js {
		js[i] = receipt.Join{EventID: event, Seq: int64(100 + i), At: at.Add(time.Duration(i) * time.Millisecond),
			DrawCommit: strings.Repeat("ab", 32), UserID: fmt.Sprintf("user-%d", i)}
	}
	return js
}

// Every receipt of a batch verifies against the JWKS alone, after a trip
// through JSON, names its own join and its user, and they share one
// signed root of the batch's size.
func TestReceiptsOfABatchVerifyOffline(t *testing.T) {
	s, jwks := keys(t, "k1")
	at := time.UnixMilli(1_800_000_000_123)
	for _, n := range []int{1, 2, 3, 7, 64, 100} {
		js := joins("e1", n, at)
		out := make([]receipt.Receipt, n)
		if err := receipt.Sign(s, js, out); err != nil {
			t.Fatal(err)
		}
		for i, r := range out {
			raw, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var back receipt.Receipt
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			c, err := receipt.VerifyFor(back, jwks, "e1")
			if err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			l := back.Leaf
			if l.Seq != js[i].Seq || l.JoinedMS != js[i].At.UnixMilli() || l.DrawCommit != js[i].DrawCommit || l.EventID != "e1" {
				t.Fatalf("n=%d i=%d: leaf %+v for join %+v", n, i, l, js[i])
			}
			if c.Size != int64(n) || c.EventID != "e1" || c.Issuer != "bo" || r.Root != out[0].Root {
				t.Fatalf("n=%d i=%d: root claims %+v", n, i, c)
			}
			if want := js[n-1].At.Unix(); c.IssuedAt.Unix() != want {
				t.Fatalf("iat %d, want the batch's latest join %d", c.IssuedAt.Unix(), want)
			}
			if !receipt.Binds(back, c, js[i].UserID) || receipt.Binds(back, c, js[(i+1)%n].UserID+"x") {
				t.Fatalf("n=%d i=%d: the leaf's user hash binds the wrong user", n, i)
			}
		}
	}
}

// Each way a receipt can be wrong is refused with its own error.
func TestVerifyRefusesWithAReason(t *testing.T) {
	s, jwks := keys(t, "k1")
	other, otherJWKS := keys(t, "k1") // same kid, another key
	js := joins("e1", 5, time.UnixMilli(1_800_000_000_000))
	out := make([]receipt.Receipt, 5)
	if err := receipt.Sign(s, js, out); err != nil {
		t.Fatal(err)
	}
	forged := make([]receipt.Receipt, 5)
	if err := receipt.Sign(other, js, forged); err != nil {
		t.Fatal(err)
	}
	admission, err := s.Sign("e1", "user-0", 100, time.Now(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	good := out[2]
	mod := func(f func(r *receipt.Receipt)) receipt.Receipt {
		r := good
		r.Path = append([]receipt.Hash(nil), good.Path...)
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name  string
		r     receipt.Receipt
		jwks  []byte
		event string
		want  error
	}{
		{"another event asked", good, jwks, "e2", receipt.ErrWrongEvent},
		{"the leaf moved to another event", mod(func(r *receipt.Receipt) { r.Leaf.EventID = "e2" }), jwks, "e2", receipt.ErrWrongEvent},
		{"another key set", good, otherJWKS, "e1", receipt.ErrBadSignature},
		{"signed by a key not in the set", forged[2], jwks, "e1", receipt.ErrBadSignature},
		{"a tampered signature", mod(func(r *receipt.Receipt) { r.Root = r.Root[:len(r.Root)-3] + "AAA" }), jwks, "e1", receipt.ErrBadSignature},
		{"a pass for a root", mod(func(r *receipt.Receipt) { r.Root = admission }), jwks, "e1", receipt.ErrBadSignature},
		{"no root", mod(func(r *receipt.Receipt) { r.Root = "" }), jwks, "e1", receipt.ErrBadSignature},
		{"another place", mod(func(r *receipt.Receipt) { r.Leaf.Seq = 1 }), jwks, "e1", receipt.ErrBadPath},
		{"another join time", mod(func(r *receipt.Receipt) { r.Leaf.JoinedMS++ }), jwks, "e1", receipt.ErrBadPath},
		{"another draw commitment", mod(func(r *receipt.Receipt) { r.Leaf.DrawCommit = "" }), jwks, "e1", receipt.ErrBadPath},
		{"another user", mod(func(r *receipt.Receipt) { r.Leaf.User = out[3].Leaf.User }), jwks, "e1", receipt.ErrBadPath},
		{"another index", mod(func(r *receipt.Receipt) { r.Index = 3 }), jwks, "e1", receipt.ErrBadPath},
		{"another receipt's path", mod(func(r *receipt.Receipt) { r.Path = out[3].Path }), jwks, "e1", receipt.ErrBadPath},
		{"a path too short", mod(func(r *receipt.Receipt) { r.Path = r.Path[1:] }), jwks, "e1", receipt.ErrBadPath},
		{"a bent path", mod(func(r *receipt.Receipt) { r.Path[0][0] ^= 1 }), jwks, "e1", receipt.ErrBadPath},
		{"no sequence", mod(func(r *receipt.Receipt) { r.Leaf.Seq = 0 }), jwks, "e1", receipt.ErrBadLeaf},
		{"a broken key set", good, []byte("{"), "e1", receipt.ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := receipt.VerifyFor(tc.r, tc.jwks, tc.event)
			if !errors.Is(err, tc.want) {
				t.Fatalf("VerifyFor: %v, want %v", err, tc.want)
			}
		})
	}
}

// A receipt of another batch of the same event does not verify with this
// batch's root, and the same fan's user hash differs between batches.
func TestBatchesAreApart(t *testing.T) {
	s, jwks := keys(t, "k1")
	js := joins("e1", 4, time.UnixMilli(1_800_000_000_000))
	a, b := make([]receipt.Receipt, 4), make([]receipt.Receipt, 4)
	if receipt.Sign(s, js, a) != nil || receipt.Sign(s, js, b) != nil {
		t.Fatal("sign")
	}
	if a[0].Leaf.User == b[0].Leaf.User {
		t.Fatal("one fan's user hash is the same in two batches")
	}
	mixed := a[1]
	mixed.Root = b[1].Root
	if _, err := receipt.Verify(mixed, jwks); !errors.Is(err, receipt.ErrBadPath) {
		t.Fatalf("a leaf under another batch's root: %v, want ErrBadPath", err)
	}
	if err := receipt.Sign(s, append(js, receipt.Join{EventID: "e2", Seq: 1, UserID: "u"}), make([]receipt.Receipt, 5)); err == nil {
		t.Fatal("Sign took joins of two events in one tree")
	}
	if err := receipt.Sign(nil, js, a); err == nil {
		t.Fatal("Sign without a key")
	}
}

// AppendJSON writes what encoding/json writes for the same receipt.
func TestAppendJSONIsEncodingJSONs(t *testing.T) {
	s, _ := keys(t, "k1")
	for _, n := range []int{1, 2, 9} {
		out := make([]receipt.Receipt, n)
		if err := receipt.Sign(s, joins("e-1.x_", n, time.UnixMilli(1_800_000_000_000)), out); err != nil {
			t.Fatal(err)
		}
		for _, r := range append(out, receipt.Receipt{}) {
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.AppendJSON([]byte("junk")); !bytes.Equal(got[4:], want) {
				t.Fatalf("AppendJSON\n%s\nencoding/json\n%s", got[4:], want)
			}
		}
	}
}

// The signed root is the token SignTyped makes of the batch's RootClaims
// (encoding/json's claims, golang-jwt's header), whatever the issuer
// and the joins' times.
func TestSignedRootIsEncodingJSONs(t *testing.T) {
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	ks, err := pass.ParseKeys([]string{"k1:" + base64.RawURLEncoding.EncodeToString(seed)})
	if err != nil {
		t.Fatal(err)
	}
	for _, iss := range []string{"bo", "", "https://bo.example/<x>&y"} {
		s := pass.NewSigner(ks, iss)
		for _, at := range []time.Time{time.UnixMilli(1_800_000_000_999), time.Unix(1_800_000_000, 0), {}} {
			out := make([]receipt.Receipt, 3)
			js := joins("e1", 3, at)
			for i := range js {
				js[i].At = at
			}
			if err := receipt.Sign(s, js, out); err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(out[0].Root, ".")
			payload, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			var c receipt.RootClaims
			if err := json.Unmarshal(payload, &c); err != nil {
				t.Fatal(err)
			}
			if want, _ := json.Marshal(c); !bytes.Equal(payload, want) {
				t.Fatalf("claims\n%s\nencoding/json\n%s", payload, want)
			}
			if c.Issuer != iss || c.Size != 3 || !c.IssuedAt.Time.Equal(at.Truncate(time.Second)) {
				t.Fatalf("claims %+v, want iss %q, size 3, iat %v", c, iss, at)
			}
			if want, err := s.SignTyped(receipt.RootType, c); err != nil || out[0].Root != want {
				t.Fatalf("signed root\n%s\nSignTyped\n%s (%v)", out[0].Root, want, err)
			}
		}
	}
}

// The batcher gives every concurrent join a receipt that verifies, in
// trees of one event each, however the joins of several events interleave.
func TestBatcherSignsConcurrentJoins(t *testing.T) {
	s, jwks := keys(t, "k1")
	b := receipt.NewBatcher(s)
	const n = 400
	var wg sync.WaitGroup
	got := make([]receipt.Receipt, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ev := fmt.Sprintf("e%d", i%3)
			got[i], errs[i] = b.Issue(context.Background(), receipt.Join{EventID: ev, Seq: int64(i + 1),
				At: time.UnixMilli(1_800_000_000_000 + int64(i)), UserID: fmt.Sprintf("u%d", i)})
		})
	}
	wg.Wait()
	roots := map[string]int{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("join %d: %v", i, errs[i])
		}
		c, err := receipt.VerifyFor(got[i], jwks, fmt.Sprintf("e%d", i%3))
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		if got[i].Leaf.Seq != int64(i+1) || !receipt.Binds(got[i], c, fmt.Sprintf("u%d", i)) {
			t.Fatalf("join %d got the receipt of %+v", i, got[i].Leaf)
		}
		roots[got[i].Root]++
	}
	b.Close()
	// after Close a join is still signed, alone
	r, err := b.Issue(context.Background(), receipt.Join{EventID: "e0", Seq: 1, UserID: "late"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := receipt.Verify(r, jwks); err != nil || c.Size != 1 {
		t.Fatalf("after Close: %+v, %v", c, err)
	}
	var none *receipt.Batcher
	if r, err := none.Issue(context.Background(), receipt.Join{}); err != nil || r.Root != "" {
		t.Fatalf("nil batcher: %+v, %v", r, err)
	}
	none.Close()
	if receipt.NewBatcher(nil) != nil {
		t.Fatal("a batcher without a key")
	}
	t.Logf("%d joins under %d signed roots", n, len(roots))
}

// A join whose context ends while it waits gets the context's error.
func TestIssueEndsWithItsContext(t *testing.T) {
	s, _ := keys(t, "k1")
	b := receipt.NewBatcher(s)
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Issue(ctx, receipt.Join{EventID: "e1", Seq: 1, UserID: "u"}); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Issue: %v, want nil or context.Canceled", err)
	}
}

// BenchmarkSign is the gateway's signing cost per join at batch sizes a
// loaded gateway sees: the tree, one signature per batch, and each
// receipt written into a join's answer (ns/join and cpu-ns/join are per
// join).
func BenchmarkSign(b *testing.B) {
	s, _ := keys(b, "k1")
	for _, n := range []int{1, 8, 16, 32, 64, 128, 256} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			js := joins("event-123", n, time.Now())
			out := make([]receipt.Receipt, n)
			buf := make([]byte, 0, 4096)
			joined := 0
			cpu := cpuNanos(b)
			for b.Loop() {
				if err := receipt.Sign(s, js, out); err != nil {
					b.Fatal(err)
				}
				for i := range out {
					buf = out[i].AppendJSON(buf[:0])
				}
				joined += n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(joined), "ns/join")
			// CPU time, which a machine shared with other work inflates
			// less than the wall clock
			b.ReportMetric(float64(cpuNanos(b)-cpu)/float64(joined), "cpu-ns/join")
		})
	}
}

// cpuNanos is the process's user and system CPU time.
func cpuNanos(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Parse takes a receipt as answered, and refuses anything else.
func TestParseTakesOnlyAReceipt(t *testing.T) {
	s, jwks := keys(t, "k1")
	out := make([]receipt.Receipt, 3)
	if err := receipt.Sign(s, joins("e1", 3, time.Now()), out); err != nil {
		t.Fatal(err)
	}
	raw := out[1].AppendJSON(nil)
	r, err := receipt.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := receipt.VerifyFor(r, jwks, "e1"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "{", "[]", `{"leaf":{},"extra":1}`, string(raw) + "{}", `{"path":["short"]}`} {
		if _, err := receipt.Parse([]byte(bad)); !errors.Is(err, receipt.ErrBadLeaf) {
			t.Errorf("Parse(%q) = %v, want ErrBadLeaf", bad, err)
		}
	}
}

func FuzzParseAndVerify(f *testing.F) {
	s, jwks := keys(f, "k1")
	out := make([]receipt.Receipt, 3)
	if err := receipt.Sign(s, joins("e1", 3, time.Now()), out); err != nil {
		f.Fatal(err)
	}
	f.Add(out[2].AppendJSON(nil))
	f.Add([]byte(`{"leaf":{"event_id":"e1","seq":1},"index":0,"path":[],"root":"a.b.c"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := receipt.Parse(b)
		if err != nil {
			return
		}
		if _, err := receipt.Verify(r, jwks); err == nil && r.Root != out[2].Root && r.Root != out[0].Root {
			t.Fatalf("a receipt under a root never signed verified: %s", b)
		}
	})
}
