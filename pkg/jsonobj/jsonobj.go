// Package jsonobj appends flat JSON objects without reflection, writing
// exactly what encoding/json writes for the equivalent struct. It is kept
// because it wins: its users (the gateway's join and position answers,
// the Kafka envelope, a join receipt's signed root) encode faster than
// encoding/json, with one allocation at most (BenchmarkJoinResponse and
// BenchmarkPositionResponse in services/gateway, BenchmarkEnvelope in
// pkg/events, BenchmarkSign in pkg/receipt; docs/benchmarks.md,
// "pkg/jsonobj against encoding/json").
package jsonobj

import (
	"encoding/json"
	"math"
	"strconv"
)

// Object builds a flat JSON object by appending, for the few hot
// encodings (the queue position and join responses, the Kafka envelope)
// where encoding/json's reflection was a visible share of a request's
// CPU. The output is byte-for-byte what encoding/json makes of the
// equivalent struct, field order included, provided the caller adds the
// fields in the struct's order and uses the OmitEmpty/OmitZero methods
// for omitempty fields; each user has a test that checks it against
// encoding/json.
type Object struct {
	b []byte
}

// New starts an object in buf (may be nil).
func New(buf []byte) *Object {
	return &Object{b: append(buf[:0], '{')}
}

func (o *Object) key(k string) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

// Str adds "k":"v". Strings of plain ASCII are appended as they are; any
// other (quotes, backslashes, control, HTML-special or non-ASCII bytes)
// goes through encoding/json, so escaping is always encoding/json's.
func (o *Object) Str(k, v string) {
	o.key(k)
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(v) // a string always marshals
			o.b = append(o.b, q...)
			return
		}
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, v...)
	o.b = append(o.b, '"')
}

// StrBytes is Str of a string held in bytes (one made on the stack, not
// converted to a string first).
func (o *Object) StrBytes(k string, v []byte) {
	for _, c := range v {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			o.Str(k, string(v))
			return
		}
	}
	o.key(k)
	o.b = append(o.b, '"')
	o.b = append(o.b, v...)
	o.b = append(o.b, '"')
}

// Int adds "k":v.
func (o *Object) Int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// Bool adds "k":true|false.
func (o *Object) Bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

// IntPtr adds "k":v, or "k":null for nil.
func (o *Object) IntPtr(k string, v *int64) {
	if v == nil {
		o.key(k)
		o.b = append(o.b, "null"...)
		return
	}
	o.Int(k, *v)
}

// FloatPtrOmitNil adds "k":v unless v is nil (a *float64 field with
// omitempty), as encoding/json writes it; NaN and infinities, which
// encoding/json refuses, are left out.
func (o *Object) FloatPtrOmitNil(k string, v *float64) {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return
	}
	o.key(k)
	// hundredths from 0 to 1 (a chance), without strconv's float search:
	// the float nearest n/100 prints as n/100 (TestFloatPtrMatchesEncodingJSON)
	if n := math.Round(*v * 100); !math.Signbit(*v) && n <= 100 && n/100 == *v {
		o.b = appendHundredths(o.b, int(n))
		return
	}
	if a := math.Abs(*v); a != 0 && (a < 1e-6 || a >= 1e21) {
		q, _ := json.Marshal(*v)
		o.b = append(o.b, q...)
		return
	}
	o.b = strconv.AppendFloat(o.b, *v, 'f', -1, 64)
}

// appendHundredths appends n/100, 0 <= n <= 100, as strconv's shortest
// form: 0, 0.05, 0.5, 0.57, 1.
func appendHundredths(b []byte, n int) []byte {
	switch {
	case n == 0:
		return append(b, '0')
	case n == 100:
		return append(b, '1')
	}
	b = append(b, '0', '.', byte('0'+n/10))
	if n%10 != 0 {
		b = append(b, byte('0'+n%10))
	}
	return b
}

// StrOmitEmpty adds "k":"v" unless v is empty (a string field with
// omitempty).
func (o *Object) StrOmitEmpty(k, v string) {
	if v != "" {
		o.Str(k, v)
	}
}

// StrsOmitEmpty adds "k":["v",...] unless v is empty (a string slice
// field with omitempty), encoded by encoding/json.
func (o *Object) StrsOmitEmpty(k string, v []string) {
	if len(v) > 0 {
		o.key(k)
		q, _ := json.Marshal(v) // strings always marshal
		o.b = append(o.b, q...)
	}
}

// IntOmitZero adds "k":v unless v is 0 (an integer field with omitempty).
func (o *Object) IntOmitZero(k string, v int64) {
	if v != 0 {
		o.Int(k, v)
	}
}

// RawOmitEmpty adds "k":v, v a JSON value, unless v is empty (a
// json.RawMessage field with omitempty), as encoding/json writes it
// (compacted, HTML-escaped). An invalid v is left out.
func (o *Object) RawOmitEmpty(k string, v []byte) {
	if len(v) == 0 {
		return
	}
	q, err := json.Marshal(json.RawMessage(v))
	if err != nil {
		return
	}
	o.key(k)
	o.b = append(o.b, q...)
}

// Appender is a value that appends its own JSON encoding, exactly what
// encoding/json writes for it (its own test holds it so).
type Appender interface{ AppendJSON(b []byte) []byte }

// Value adds "k": and v's own encoding (for a pointer field with
// omitempty, the caller leaves out a nil one).
func (o *Object) Value(k string, v Appender) {
	o.key(k)
	o.b = v.AppendJSON(o.b)
}

// Len is how many bytes the object has so far.
func (o *Object) Len() int { return len(o.b) }

// Bytes closes the object and returns it.
func (o *Object) Bytes() []byte {
	return append(o.b, '}')
}
