// Package receipt is the join receipt: what a queued join hands the fan
// as proof of their place, verifiable offline against the admission
// pass's published keys (GET /.well-known/jwks.json). The joins a gateway
// answers together are the leaves of one Merkle tree (RFC 6962 hashing);
// its root, with the event, a batch id, the tree's size and the time, is
// signed once with the pass's current key (a JWS of header typ RootType,
// pkg/pass.SignTyped), and each receipt carries its leaf (event, join
// sequence, join time by Redis's clock, the event's draw commitment, a
// salted hash of the user), its inclusion path and that signed root, so
// one Ed25519 signature serves a whole batch. Verify is the check a fan,
// a verifier or an edge worker runs; docs/admission-pass.md ("The join
// receipt") is the wire format.
package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/boxoffice/boxoffice/pkg/pass"
)

// RootType is the header typ of a receipt's signed root; a pass's is
// "JWT", so one is never taken for the other (pkg/pass).
const RootType = "bo-receipt-root+jwt"

// leafVersion starts every leaf's bytes, userVersion every user hash's
// input: a change of either layout changes them.
const (
	leafVersion = "bo-join-receipt-leaf-v1"
	userVersion = "bo-join-receipt-user-v1"
)

// Leaf is one join as the tree holds it.
type Leaf struct {
	EventID string `json:"event_id"`
	// Seq is the join sequence: the fan's place is seq - served - 1 at
	// most (GET /api/events/{id}/progress).
	Seq int64 `json:"seq"`
	// JoinedMS is when the join was queued, by Redis's clock, in unix
	// milliseconds.
	JoinedMS int64 `json:"joined_ms"`
	// DrawCommit is the event's draw commitment at the join (hex
	// SHA-256 of the pre-queue's draw seed; "" when the event has none).
	DrawCommit string `json:"draw_commit"`
	// User is UserHash(batch, user id) in hex: it binds the receipt to
	// its fan without naming them.
	User string `json:"user"`
}

// Bytes is the leaf's canonical encoding, the input of its leaf hash:
// leafVersion and the fields in order, each on its own line ("\n"
// between them, none after), integers in decimal. No field can hold a
// newline (event ids, hex).
func (l *Leaf) Bytes(buf []byte) []byte {
	b := append(buf[:0], leafVersion...)
	b = append(b, '\n')
	b = append(b, l.EventID...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, l.Seq, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, l.JoinedMS, 10)
	b = append(b, '\n')
	b = append(b, l.DrawCommit...)
	b = append(b, '\n')
	return append(b, l.User...)
}

// UserHash is the user binding of a leaf: hex SHA-256 of userVersion,
// the batch id and the user id, each followed by "\n" but the last. The
// batch id salts it, so the same fan's leaves of two batches differ and
// nothing is precomputed; whoever holds the receipt and knows (or
// guesses) the user id can check it.
func UserHash(batch, userID string) string {
	var in [len(userVersion) + 1 + 64 + 1 + 128]byte // a batch id and a user id fit
	b := append(in[:0], userVersion...)
	b = append(b, '\n')
	b = append(b, batch...)
	b = append(b, '\n')
	b = append(b, userID...)
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// Receipt is what a fan keeps: the leaf of their join, its index in the
// batch's tree, the inclusion path (sibling hashes from the leaf up) and
// the signed root (a JWS of RootClaims).
type Receipt struct {
	Leaf  Leaf   `json:"leaf"`
	Index int64  `json:"index"`
	Path  []Hash `json:"path"`
	Root  string `json:"root"`
}

// RootClaims are the signed root's claims: iss (PASS_ISSUER), iat (the
// batch's latest join, by Redis's clock, unix seconds), event_id, batch
// (the batch id), size (the tree's leaves) and root (the tree head,
// base64url).
type RootClaims struct {
	EventID string `json:"event_id"`
	Batch   string `json:"batch"`
	Size    int64  `json:"size"`
	Root    Hash   `json:"root"`
	jwt.RegisteredClaims
}

// AppendJSON appends the receipt as encoding/json writes it (the join's
// answer, without reflection; TestAppendJSONIsEncodingJSONs). Its strings
// are event ids, hex, base64url and a JWS, none of which JSON escapes.
func (r *Receipt) AppendJSON(b []byte) []byte {
	b = append(b, `{"leaf":{"event_id":"`...)
	b = append(b, r.Leaf.EventID...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, r.Leaf.Seq, 10)
	b = append(b, `,"joined_ms":`...)
	b = strconv.AppendInt(b, r.Leaf.JoinedMS, 10)
	b = append(b, `,"draw_commit":"`...)
	b = append(b, r.Leaf.DrawCommit...)
	b = append(b, `","user":"`...)
	b = append(b, r.Leaf.User...)
	b = append(b, `"},"index":`...)
	b = strconv.AppendInt(b, r.Index, 10)
	b = append(b, `,"path":`...)
	if r.Path == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Path {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = base64.RawURLEncoding.AppendEncode(b, r.Path[i][:])
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	b = append(b, `,"root":"`...)
	b = append(b, r.Root...)
	return append(b, `"}`...)
}

// Parse reads a receipt as the join answers it (and the page downloads
// it): a JSON object of exactly the receipt's fields (ErrBadLeaf
// otherwise). It checks nothing else; Verify does.
func Parse(b []byte) (Receipt, error) {
	var r Receipt
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Receipt{}, fmt.Errorf("%w: %v", ErrBadLeaf, err)
	}
	if dec.More() {
		return Receipt{}, fmt.Errorf("%w: more after the receipt", ErrBadLeaf)
	}
	return r, nil
}

// Errors of Verify, each a clear reason a receipt is refused.
var (
	// ErrBadSignature: the signed root is not a root signed by a key of
	// the set (or is malformed).
	ErrBadSignature = errors.New("receipt: the signed root does not verify against the key set")
	// ErrWrongEvent: the leaf names another event than the signed root,
	// or than the one asked for (VerifyFor).
	ErrWrongEvent = errors.New("receipt: for another event")
	// ErrBadLeaf: the receipt or its leaf is malformed.
	ErrBadLeaf = errors.New("receipt: malformed")
)

// Verify checks a receipt against a JWKS document (the pass's keys, as
// served at /.well-known/jwks.json): the root is a JWS of header typ
// RootType, alg EdDSA, signed by a key of the set (ErrBadSignature); its
// event is the leaf's (ErrWrongEvent); and the leaf with the index and
// the path leads to the signed root of a tree of the signed size
// (ErrBadPath). It returns the signed root's claims.
func Verify(r Receipt, jwks []byte) (RootClaims, error) {
	var c RootClaims
	if err := pass.VerifyTyped(jwks, r.Root, RootType, time.Now(), &c); err != nil {
		return RootClaims{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if c.EventID != r.Leaf.EventID {
		return RootClaims{}, fmt.Errorf("%w: the leaf is of %q, the signed root of %q", ErrWrongEvent, r.Leaf.EventID, c.EventID)
	}
	if c.Size < 1 || c.Batch == "" {
		return RootClaims{}, fmt.Errorf("%w: a signed root without size or batch", ErrBadSignature)
	}
	if r.Leaf.Seq < 1 || r.Leaf.EventID == "" {
		return RootClaims{}, fmt.Errorf("%w: no event or join sequence", ErrBadLeaf)
	}
	got, err := rootFromPath(LeafHash(r.Leaf.Bytes(nil)), r.Index, c.Size, r.Path)
	if err != nil {
		return RootClaims{}, err
	}
	if got != c.Root {
		return RootClaims{}, fmt.Errorf("%w: it leads to %s, the signed root is %s", ErrBadPath, got, c.Root)
	}
	return c, nil
}

// VerifyFor is Verify for a receipt that must be of eventID
// (ErrWrongEvent otherwise).
func VerifyFor(r Receipt, jwks []byte, eventID string) (RootClaims, error) {
	c, err := Verify(r, jwks)
	if err != nil {
		return RootClaims{}, err
	}
	if r.Leaf.EventID != eventID {
		return RootClaims{}, fmt.Errorf("%w: the receipt is of %q, not %q", ErrWrongEvent, r.Leaf.EventID, eventID)
	}
	return c, nil
}

// Binds reports whether a verified receipt's leaf is userID's (its user
// hash under the batch of c, the claims Verify returned).
func Binds(r Receipt, c RootClaims, userID string) bool {
	return r.Leaf.User == UserHash(c.Batch, userID)
}
