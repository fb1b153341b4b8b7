package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"
)

// The tree is RFC 6962's: the roots of the certificate-transparency test
// leaves (the same vectors as its reference implementations) for every
// size from 1 to 8.
func TestRootsAreRFC6962s(t *testing.T) {
	inputs := []string{"", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"}
	roots := []string{
		"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
		"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
		"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
		"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
		"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
		"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
	}
	var leaves []Hash
	for i, in := range inputs {
		b, err := hex.DecodeString(in)
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, LeafHash(b))
		root, _ := tree(leaves)
		if got := hex.EncodeToString(root[:]); got != roots[i] {
			t.Errorf("root of %d leaves %s, want %s", i+1, got, roots[i])
		}
	}
}

// mth is RFC 6962's MTH and path its PATH, written as the RFC states
// them (recursively, for one leaf at a time).
func mth(d []Hash) Hash {
	if len(d) == 1 {
		return d[0]
	}
	k := split(len(d))
	l, r := mth(d[:k]), mth(d[k:])
	return sha256.Sum256(append(append([]byte{nodePrefix}, l[:]...), r[:]...))
}

func path(m int, d []Hash) []Hash {
	if len(d) == 1 {
		return nil
	}
	k := split(len(d))
	if m < k {
		return append(path(m, d[:k]), mth(d[k:]))
	}
	return append(path(m-k, d[k:]), mth(d[:k]))
}

func split(n int) int {
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	return k
}

// Property: for trees of every size up to 140 and around 256 of random leaves, the root
// and every path are the RFC's, every path leads its leaf to the root,
// and any change (another leaf, a flipped bit of a path hash, another
// index, a hash more or less) does not.
func TestEveryPathLeadsToTheRootAndNothingElseDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{255, 256, 257}
	for n := 1; n <= 140; n++ {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		leaves := make([]Hash, n)
		for i := range leaves {
			for j := range leaves[i] {
				leaves[i][j] = byte(rng.Uint32())
			}
		}
		root, paths := tree(leaves)
		if want := mth(leaves); root != want {
			t.Fatalf("n=%d: root %s, RFC 6962 MTH %s", n, root, want)
		}
		for m := range leaves {
			if want := path(m, leaves); !equal(paths[m], want) {
				t.Fatalf("n=%d m=%d: path %v, RFC 6962 PATH %v", n, m, paths[m], want)
			}
			got, err := rootFromPath(leaves[m], int64(m), int64(n), paths[m])
			if err != nil || got != root {
				t.Fatalf("n=%d m=%d: the path leads to %s (%v), not the root %s", n, m, got, err, root)
			}
			assertMisses(t, n, m, root, leaves, paths[m], rng)
		}
	}
}

// assertMisses: no altered proof of leaf m leads to root.
func assertMisses(t *testing.T, n, m int, root Hash, leaves []Hash, p []Hash, rng *rand.Rand) {
	t.Helper()
	misses := func(what string, leaf Hash, index, size int64, p []Hash) {
		t.Helper()
		got, err := rootFromPath(leaf, index, size, p)
		if err == nil && got == root {
			t.Fatalf("n=%d m=%d: %s still leads to the root", n, m, what)
		}
		if err != nil && !errors.Is(err, ErrBadPath) {
			t.Fatalf("n=%d m=%d: %s: %v, want ErrBadPath", n, m, what, err)
		}
	}
	other := leaves[m]
	other[rng.IntN(len(other))] ^= 1 << rng.IntN(8)
	misses("another leaf", other, int64(m), int64(n), p)
	if len(p) > 0 {
		bent := append([]Hash(nil), p...)
		i := rng.IntN(len(bent))
		bent[i][rng.IntN(len(bent[i]))] ^= 1 << rng.IntN(8)
		misses("a flipped path bit", leaves[m], int64(m), int64(n), bent)
		misses("a hash less", leaves[m], int64(m), int64(n), p[:len(p)-1])
	}
	misses("a hash more", leaves[m], int64(m), int64(n), append(append([]Hash(nil), p...), root))
	if n > 1 {
		misses("another index", leaves[m], int64((m+1+rng.IntN(n-1))%n), int64(n), p)
	}
	misses("an index outside", leaves[m], int64(n), int64(n), p)
	misses("a negative index", leaves[m], -1, int64(n), p)
}

func equal(a, b []Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A leaf is never a node: the same 64 bytes hash differently as a leaf
// and as the node of two children (the domain separation a second
// preimage attack on the tree would need to get around).
func TestLeafAndNodeHashesDiffer(t *testing.T) {
	l, r := LeafHash([]byte("a")), LeafHash([]byte("b"))
	if nodeHash(&l, &r) == LeafHash(append(l[:], r[:]...)) {
		t.Fatal("a node's hash equals the leaf hash of its children's bytes")
	}
}

func FuzzHashText(f *testing.F) {
	f.Add("47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		var h Hash
		if err := h.UnmarshalText([]byte(s)); err != nil {
			return
		}
		if b, _ := h.MarshalText(); string(b) != s {
			t.Fatalf("%q reads as %x and writes as %q", s, h, b)
		}
	})
}
