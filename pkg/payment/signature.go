package payment

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries the webhook signature.
const SignatureHeader = "X-Boxoffice-Signature"

// DefaultTolerance is how far a signature's timestamp may be from now.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify and ParseSignature.
var (
	ErrNoSignature  = errors.New("missing webhook signature")
	ErrBadHeader    = errors.New("malformed webhook signature header")
	ErrBadSignature = errors.New("webhook signature does not match")
	ErrStale        = errors.New("webhook timestamp outside the tolerance window")
)

// maxHeader bounds the header a verifier will look at.
const maxHeader = 1024

// Sign returns the header value for body signed at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Signature is a parsed header.
type Signature struct {
	Timestamp string // exactly as sent: it is part of the signed text
	Unix      int64
	V1        [][]byte // decoded signatures
}

// ParseSignature parses "t=<unix>,v1=<hex>[,v1=<hex>...]". Unknown keys
// (future schemes) are ignored; exactly one t and at least one valid v1
// are required.
func ParseSignature(h string) (Signature, error) {
	if h == "" {
		return Signature{}, ErrNoSignature
	}
	if len(h) > maxHeader {
		return Signature{}, ErrBadHeader
	}
	var s Signature
	seenT := false
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Signature{}, ErrBadHeader
		}
		switch k {
		case "t":
			if seenT || v == "" || len(v) > 12 {
				return Signature{}, ErrBadHeader
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || strconv.FormatInt(n, 10) != v {
				return Signature{}, ErrBadHeader
			}
			s.Timestamp, s.Unix, seenT = v, n, true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return Signature{}, ErrBadHeader
			}
			s.V1 = append(s.V1, b)
		}
	}
	if !seenT || len(s.V1) == 0 {
		return Signature{}, ErrBadHeader
	}
	return s, nil
}

// Verify checks header against body: well-formed, timestamp within
// tolerance of now (either side), and one v1 equal (constant time) to the
// HMAC under secret.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	s, err := ParseSignature(header)
	if err != nil {
		return err
	}
	want := mac(secret, s.Timestamp, body)
	ok := false
	for _, got := range s.V1 {
		if hmac.Equal(got, want) {
			ok = true
		}
	}
	if !ok {
		return ErrBadSignature
	}
	d := now.Sub(time.Unix(s.Unix, 0))
	if d > tolerance || d < -tolerance {
		return ErrStale
	}
	return nil
}
