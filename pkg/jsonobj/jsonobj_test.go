package jsonobj

import (
	"encoding/json"
	"math"
	"testing"
)

func TestObjectMatchesEncodingJSON(t *testing.T) {
	type flat struct {
		S string `json:"s"`
		I int64  `json:"i"`
		B bool   `json:"b"`
		P *int64 `json:"p"`
	}
	seven := int64(7)
	for _, s := range []string{"", "plain-ascii_1.2", `q"uote`, `b\s`, "<a>&b", "\n\t\x00", "\x7f", "é", "日本", "\xff\xfe", "\u2028"} {
		for _, v := range []flat{{S: s, I: -1 << 62, B: true}, {S: s, P: &seven}} {
			o := New(nil)
			o.Str("s", v.S)
			o.Int("i", v.I)
			o.Bool("b", v.B)
			o.IntPtr("p", v.P)
			want, _ := json.Marshal(v)
			if got := o.Bytes(); string(got) != string(want) {
				t.Errorf("%q:\n got %s\nwant %s", s, got, want)
			}
			o = New(nil)
			o.StrBytes("s", []byte(v.S))
			o.Int("i", v.I)
			o.Bool("b", v.B)
			o.IntPtr("p", v.P)
			if got := o.Bytes(); string(got) != string(want) {
				t.Errorf("StrBytes %q:\n got %s\nwant %s", s, got, want)
			}
		}
	}
	if got := New([]byte("reused")).Bytes(); string(got) != "{}" {
		t.Errorf("empty object %s", got)
	}
}

func TestOmitMatchesOmitempty(t *testing.T) {
	type omit struct {
		S string `json:"s,omitempty"`
		I int64  `json:"i,omitempty"`
		B bool   `json:"b"`
	}
	for _, v := range []omit{{}, {S: "x"}, {I: 3}, {S: "y", I: -2, B: true}} {
		o := New(nil)
		o.StrOmitEmpty("s", v.S)
		o.IntOmitZero("i", v.I)
		o.Bool("b", v.B)
		want, _ := json.Marshal(v)
		if got := o.Bytes(); string(got) != string(want) {
			t.Errorf("%+v:\n got %s\nwant %s", v, got, want)
		}
	}
}

func TestFloatPtrMatchesEncodingJSON(t *testing.T) {
	type f struct {
		F *float64 `json:"f,omitempty"`
	}
	xs := []float64{0, 1, 0.57, 0.01, 0.1 + 0.2, -3.5, 1e-7, 123456789, 1e21, 2.5e-300, 0.005, 1.01, -0.01, math.Copysign(0, -1)}
	for n := range 101 {
		xs = append(xs, math.Round(float64(n)/100*100)/100, float64(n)/100)
	}
	for _, x := range xs {
		o := New(nil)
		o.FloatPtrOmitNil("f", &x)
		want, _ := json.Marshal(f{&x})
		if got := o.Bytes(); string(got) != string(want) {
			t.Errorf("%v:\n got %s\nwant %s", x, got, want)
		}
	}
	o := New(nil)
	o.FloatPtrOmitNil("f", nil)
	if got := o.Bytes(); string(got) != "{}" {
		t.Errorf("nil: %s", got)
	}
}

type rawList []int

func (r rawList) AppendJSON(b []byte) []byte {
	q, _ := json.Marshal([]int(r))
	return append(b, q...)
}

// Value writes the key and the value's own encoding, as encoding/json
// does for a field of a type with its own encoding.
func TestValueIsTheFieldsEncoding(t *testing.T) {
	o := New(nil)
	o.Int("a", 1)
	o.Value("v", rawList{2, 3})
	if got, want := string(o.Bytes()), `{"a":1,"v":[2,3]}`; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}
