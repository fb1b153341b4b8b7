package contracttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// A Refusal is a request the document refuses: a valid body with one
// property made invalid, or the valid body sent as another media type.
type Refusal struct {
	// Name says what is wrong: `capacity = 2147483648`.
	Name string
	// Field is the property made invalid ("sections[0].name"), "" when
	// the media type is.
	Field       string
	Body        []byte
	ContentType string // "" for none
}

// Leaf is the last name of Field ("name" of "sections[0].name"): what
// the server's message must name.
func (r Refusal) Leaf() string {
	return r.Field[strings.LastIndexAny(r.Field, ".]")+1:]
}

// Bound is a valid body with one property at one of its bounds (its
// minimum or maximum): the server must accept what the document does.
type Bound struct {
	Name, Field string
	Body        []byte
}

// Refusals returns the requests of method and path that the document
// refuses, made from valid (called for a fresh valid body each time, so
// that each may carry an id of its own): each property of the JSON
// request body's schema, also of the first item of an array of objects,
// made invalid every way its schema allows (null, another JSON type,
// below its minimum, above its maximum, 2^31, 2^63 and -2^63 for an
// integer, longer than its maxLength, outside its pattern or enum), and
// the body sent as text/plain and with no Content-Type. Only what
// kin-openapi's request validation refuses is returned, so the server
// must refuse each one too.
func (c *Contract) Refusals(method, path string, valid func() map[string]any) []Refusal {
	c.t.Helper()
	schema := c.jsonBody(method, path)
	var out []Refusal
	for _, m := range mutations(schema, valid(), "") {
		body := valid()
		m.apply(body)
		raw, err := json.Marshal(body)
		if err != nil {
			c.t.Fatalf("%s %s: %s: %v", method, path, m.name, err)
		}
		r := Refusal{Name: m.name, Field: m.field, Body: raw, ContentType: "application/json"}
		if c.refuses(method, path, r) {
			out = append(out, r)
		}
	}
	for _, ct := range []string{"text/plain", ""} {
		raw, _ := json.Marshal(valid())
		r := Refusal{Name: "Content-Type " + strconv.Quote(ct), Body: raw, ContentType: ct}
		if !c.refuses(method, path, r) {
			c.t.Fatalf("%s %s: the document accepts a body sent as %q", method, path, ct)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		c.t.Fatalf("%s %s: no refusals", method, path)
	}
	return out
}

// Bounds returns valid with each numeric property at its minimum and at
// its maximum, as the document accepts them, but for the properties in
// skip.
func (c *Contract) Bounds(method, path string, valid func() map[string]any, skip ...string) []Bound {
	c.t.Helper()
	schema := c.jsonBody(method, path)
	var out []Bound
	for _, name := range sortedProps(schema) {
		p := schema.Properties[name].Value
		if !p.Type.Is("integer") && !p.Type.Is("number") || contains(skip, name) {
			continue
		}
		for _, v := range []*float64{p.Min, p.Max} {
			if v == nil {
				continue
			}
			body := valid()
			body[name] = json.RawMessage(strconv.FormatFloat(*v, 'f', -1, 64))
			raw, _ := json.Marshal(body)
			b := Bound{Name: fmt.Sprintf("%s = %v", name, *v), Field: name, Body: raw}
			if c.refuses(method, path, Refusal{Body: raw, ContentType: "application/json"}) {
				c.t.Fatalf("%s %s: the document refuses its own bound %s", method, path, b.Name)
			}
			out = append(out, b)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// jsonBody is the schema of the operation's application/json body.
func (c *Contract) jsonBody(method, path string) *openapi3.Schema {
	c.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	route, _, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	rb := route.Operation.RequestBody
	if rb == nil || rb.Value.Content.Get("application/json") == nil {
		c.t.Fatalf("%s %s has no JSON request body", method, path)
	}
	return rb.Value.Content.Get("application/json").Schema.Value
}

// refuses reports whether kin-openapi's request validation refuses r.
func (c *Contract) refuses(method, path string, r Refusal) bool {
	req := httptest.NewRequest(method, path, bytes.NewReader(r.Body))
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	err = openapi3filter.ValidateRequest(context.Background(), in)
	_, _ = io.Copy(io.Discard, req.Body)
	return err != nil
}

// ValidateRequest validates one request against the document (its body
// is read and put back).
func (c *Contract) ValidateRequest(r *http.Request) error {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	vr := r.Clone(context.Background())
	vr.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := c.router.FindRoute(vr)
	if err != nil {
		return err
	}
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{Request: vr,
		PathParams: params, Route: route, Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}})
}

// mutation sets one property of a body to an invalid value.
type mutation struct {
	name, field string
	apply       func(body map[string]any)
}

// mutations of the properties of schema, an object, in valid (the valid
// value at this place), at prefix.
func mutations(schema *openapi3.Schema, valid map[string]any, prefix string) []mutation {
	var out []mutation
	for _, name := range sortedProps(schema) {
		p := schema.Properties[name].Value
		field := prefix + name
		seen := map[string]bool{}
		for _, v := range invalidValues(p) {
			if seen[string(v)] {
				continue
			}
			seen[string(v)] = true
			out = append(out, mutation{name: field + " = " + short(v), field: field, apply: setter(prefix, name, v)})
		}
		// the first item of an array of objects the valid body has
		items, _ := valid[name].([]any)
		if p.Type.Is("array") && p.Items != nil && p.Items.Value.Type.Is("object") && len(items) > 0 {
			first, _ := items[0].(map[string]any)
			out = append(out, mutations(p.Items.Value, first, field+"[0].")...)
		}
	}
	return out
}

// setter sets name to v in the object at prefix ("" or "list[0].").
func setter(prefix, name string, v json.RawMessage) func(map[string]any) {
	return func(body map[string]any) {
		obj := body
		if prefix != "" {
			list, _, _ := strings.Cut(prefix, "[")
			obj = body[list].([]any)[0].(map[string]any)
		}
		obj[name] = v
	}
}

// invalidValues are JSON values schema refuses, or may refuse (each is
// kept only if the document refuses it).
func invalidValues(s *openapi3.Schema) []json.RawMessage {
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	lit := func(s string) json.RawMessage { return json.RawMessage(s) }
	vals := []json.RawMessage{lit("null")}
	switch {
	case s.Type.Is("integer"), s.Type.Is("number"):
		vals = append(vals, raw("1"), lit("2147483648"), lit("-2147483649"), lit("9223372036854775808"), lit("-9223372036854775808"))
		if s.Type.Is("integer") {
			vals = append(vals, lit("1.5"))
		}
		if s.Min != nil {
			vals = append(vals, raw(*s.Min-1), raw(*s.Min-0.5))
		}
		if s.Max != nil {
			vals = append(vals, raw(*s.Max+1))
		}
	case s.Type.Is("string"):
		vals = append(vals, lit("1"), raw("a\x00b"), raw("a\nb"), raw(""), raw("not-a-value"), raw("noon"))
		if s.MaxLength != nil {
			vals = append(vals, raw(strings.Repeat("a", int(*s.MaxLength)+1)))
		}
		if s.Pattern != "" {
			if re, err := regexp.Compile(s.Pattern); err == nil {
				for _, v := range []string{"a\x00b", "a b", "a/b", "", strings.Repeat("a", 300)} {
					if !re.MatchString(v) {
						vals = append(vals, raw(v))
						break
					}
				}
			}
		}
	case s.Type.Is("boolean"):
		vals = append(vals, raw("true"), lit("1"))
	case s.Type.Is("array"):
		vals = append(vals, lit("{}"), lit("[null]"), lit("[1]"))
		if s.MaxItems != nil && *s.MaxItems < math.MaxInt32 {
			items := make([]string, *s.MaxItems+1)
			for i := range items {
				items[i] = strconv.Quote("A" + strconv.Itoa(i))
			}
			vals = append(vals, lit("["+strings.Join(items, ",")+"]"))
		}
	case s.Type.Is("object"):
		vals = append(vals, lit("[]"))
	}
	return vals
}

func sortedProps(s *openapi3.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// short is v as a name shows it.
func short(v json.RawMessage) string {
	if len(v) > 40 {
		return fmt.Sprintf("%s…(%d bytes)", v[:20], len(v))
	}
	return string(v)
}
