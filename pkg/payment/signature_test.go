package payment

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var secret = []byte("whsec_test_0123456789")

func TestSignVerify(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"user_id":"u1","event_id":"e1","seat_id":"A1","payment_id":"p1"}`)
	h := Sign(secret, now, body)
	if !strings.HasPrefix(h, "t=1700000000,v1=") {
		t.Fatalf("header %q", h)
	}
	cases := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", h, body, now, nil},
		{"valid within tolerance", h, body, now.Add(4 * time.Minute), nil},
		{"clock skew ahead", h, body, now.Add(-4 * time.Minute), nil},
		{"replayed late", h, body, now.Add(6 * time.Minute), ErrStale},
		{"from the future", h, body, now.Add(-6 * time.Minute), ErrStale},
		{"tampered body", h, []byte(strings.Replace(string(body), "u1", "u2", 1)), now, ErrBadSignature},
		{"wrong secret", Sign([]byte("other"), now, body), body, now, ErrBadSignature},
		{"changed timestamp", strings.Replace(h, "t=1700000000", "t=1700000001", 1), body, now, ErrBadSignature},
		{"missing", "", body, now, ErrNoSignature},
		{"no v1", "t=1700000000", body, now, ErrBadHeader},
		{"no t", h[strings.Index(h, "v1="):], body, now, ErrBadHeader},
		{"bad hex", "t=1700000000,v1=zz", body, now, ErrBadHeader},
		{"two t", "t=1,t=2," + h[strings.Index(h, "v1="):], body, now, ErrBadHeader},
		{"rotation: second v1 matches", "t=1700000000,v1=" + strings.Repeat("00", 32) + "," + h[strings.Index(h, "v1="):], body, now, nil},
		{"unknown scheme ignored", h + ",v0=abc", body, now, nil},
	}
	for _, tc := range cases {
		err := Verify(secret, tc.header, tc.body, tc.now, DefaultTolerance)
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// FuzzParseSignature: parsing never panics, and whatever parses re-verifies
// consistently (a header that verifies for a body was signed for it).
func FuzzParseSignature(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"payment_id":"p1"}`)
	f.Add(Sign(secret, now, body), body)
	f.Add("", body)
	f.Add("t=,v1=", body)
	f.Add("t=1700000000,v1="+strings.Repeat("a", 64), body)
	f.Add("t=-1,v1=00", []byte{})
	f.Add("t=99999999999999999999,v1=00", []byte("x"))
	f.Add(",,,=,=", []byte("{}"))
	f.Add("t=1700000000,v1=0g", []byte("{}"))
	f.Fuzz(func(t *testing.T, header string, b []byte) {
		s, err := ParseSignature(header)
		if err == nil && (len(s.V1) == 0 || s.Unix <= 0) {
			t.Fatalf("parsed %q into %+v", header, s)
		}
		if Verify(secret, header, b, now, DefaultTolerance) == nil {
			if Sign(secret, time.Unix(s.Unix, 0), b) != "t="+s.Timestamp+",v1="+hexOf(secret, s.Timestamp, b) {
				t.Fatalf("verified header %q is not a signature of the body", header)
			}
		}
	})
}

func hexOf(secret []byte, ts string, body []byte) string {
	const digits = "0123456789abcdef"
	m := mac(secret, ts, body)
	out := make([]byte, 0, 2*len(m))
	for _, c := range m {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
