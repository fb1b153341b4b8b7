package receipt

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// Hash is a SHA-256 digest of the tree: a leaf's, a node's or the root.
// In JSON it is base64url without padding (43 characters).
type Hash [sha256.Size]byte

// MarshalText is the hash in base64url without padding.
func (h Hash) MarshalText() ([]byte, error) {
	return base64.RawURLEncoding.AppendEncode(nil, h[:]), nil
}

// UnmarshalText reads a hash in base64url without padding (strictly: one
// spelling per hash).
func (h *Hash) UnmarshalText(b []byte) error {
	if base64.RawURLEncoding.EncodedLen(len(h)) != len(b) {
		return fmt.Errorf("hash: want %d base64url characters, got %d", base64.RawURLEncoding.EncodedLen(len(h)), len(b))
	}
	if _, err := base64.RawURLEncoding.Strict().Decode(h[:], b); err != nil {
		return fmt.Errorf("hash: %w", err)
	}
	return nil
}

// String is the hash in base64url.
func (h Hash) String() string { return base64.RawURLEncoding.EncodeToString(h[:]) }

// The tree is RFC 6962's (section 2.1; RFC 9162 2.1.1): a leaf hashes as
// SHA-256(0x00 ‖ leaf bytes), a node as SHA-256(0x01 ‖ left ‖ right), so
// a leaf can never be passed off as a node; a tree of n leaves splits at
// the largest power of two below n.
const (
	leafPrefix = 0x00
	nodePrefix = 0x01
)

// LeafHash is SHA-256(0x00 ‖ b).
func LeafHash(b []byte) Hash {
	var in [256]byte // a leaf's bytes fit
	return sha256.Sum256(append(append(in[:0], leafPrefix), b...))
}

// nodeHash is SHA-256(0x01 ‖ l ‖ r).
func nodeHash(l, r *Hash) Hash {
	var buf [1 + 2*sha256.Size]byte
	buf[0] = nodePrefix
	copy(buf[1:], l[:])
	copy(buf[1+sha256.Size:], r[:])
	return sha256.Sum256(buf[:])
}

// tree is the root of leaves and every leaf's inclusion path (RFC 6962
// PATH(m, D[n]), from the leaf's sibling up to the root's child), the
// paths sharing one backing array.
func tree(leaves []Hash) (Hash, [][]Hash) {
	n := len(leaves)
	if n == 0 {
		return Hash{}, nil
	}
	depth := 0
	for 1<<depth < n {
		depth++
	}
	flat := make([]Hash, n*depth)
	paths := make([][]Hash, n)
	for i := range paths {
		paths[i] = flat[i*depth : i*depth : (i+1)*depth]
	}
	return subtree(leaves, paths), paths
}

// subtree is MTH(leaves), appending each leaf's siblings (deepest first)
// to its path.
func subtree(leaves []Hash, paths [][]Hash) Hash {
	n := len(leaves)
	if n == 1 {
		return leaves[0]
	}
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	l, r := subtree(leaves[:k], paths[:k]), subtree(leaves[k:], paths[k:])
	for i := range paths[:k] {
		paths[i] = append(paths[i], r)
	}
	for i := k; i < n; i++ {
		paths[i] = append(paths[i], l)
	}
	return nodeHash(&l, &r)
}

// ErrBadPath: the inclusion path does not lead from the leaf to the
// signed root.
var ErrBadPath = errors.New("receipt: the inclusion path does not lead to the signed root")

// rootFromPath is the root that leaf at index of a tree of size leaves
// and path lead to (RFC 9162 2.1.3.2), or ErrBadPath when the path's
// length does not fit index and size.
func rootFromPath(leaf Hash, index, size int64, path []Hash) (Hash, error) {
	if index < 0 || index >= size {
		return Hash{}, fmt.Errorf("%w: index %d outside a tree of %d", ErrBadPath, index, size)
	}
	fn, sn, r := index, size-1, leaf
	for i := range path {
		if sn == 0 {
			return Hash{}, fmt.Errorf("%w: %d hashes, more than a tree of %d needs", ErrBadPath, len(path), size)
		}
		if fn&1 == 1 || fn == sn {
			r = nodeHash(&path[i], &r)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = nodeHash(&r, &path[i])
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return Hash{}, fmt.Errorf("%w: %d hashes, fewer than a tree of %d needs", ErrBadPath, len(path), size)
	}
	return r, nil
}
