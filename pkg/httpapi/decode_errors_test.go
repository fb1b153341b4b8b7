package httpapi

import (
	"strings"
	"testing"
	"time"
)

type decodeProbe struct {
	EventID string    `json:"event_id"`
	N       int       `json:"n"`
	Inner   struct{}  `json:"inner"`
	List    []string  `json:"list"`
	At      time.Time `json:"at"`
}

// Decode errors name the field and the JSON type expected, never a Go
// type (an internal detail that only helps an attacker).
func TestDecodeErrorsShowNoGoTypes(t *testing.T) {
	for body, want := range map[string]string{
		`[]`:                  "expected an object",
		`"str"`:               "expected an object",
		`{"event_id":1}`:      `field "event_id": expected a string`,
		`{"n":"x"}`:           `field "n": expected an integer`,
		`{"n":1e40}`:          `field "n": expected an integer`,
		`{"inner":[1]}`:       `field "inner": expected an object`,
		`{"list":{}}`:         `field "list": expected an array`,
		`{"at":"noon"}`:       "invalid JSON body",
		`{"event_id":"a"} {}`: "invalid JSON body",
		`{`:                   "invalid JSON body",
	} {
		var p decodeProbe
		err := DecodeJSON([]byte(body), &p)
		if err == nil {
			t.Errorf("%s: no error", body)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, want) || strings.Contains(msg, "Go ") || strings.Contains(msg, "decodeProbe") ||
			strings.Contains(msg, "httpapi.") || strings.Contains(msg, "struct {") || strings.Contains(msg, "[]string") {
			t.Errorf("%s: %q (want it to contain %q and no Go type)", body, msg, want)
		}
	}
}

// nullField names where a null is, however deep, and nothing else.
func TestNullField(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":null}`:                            "a",
		`{"a":1,"b":{"c":[1,{"d":null}]}}`:      "b.c[1].d",
		`{"s":[{"n":"x","r":1},{"r":null}]}`:    "s[1].r",
		`[1,null]`:                              "[1]",
		`{"a":[null]}`:                          "a[0]",
		`{"a":"null","b":[],"c":{}}`:            "",
		`{"a":1}`:                               "",
		`null`:                                  "",
		`{"a":`:                                 "",
		`{"a":{"b":1},"c":null}`:                "c",
		`{"a":[[1],[2,null]]}`:                  "a[1][1]",
		`{"k":{"null":1},"v":[{"x":[]}],"w":0}`: "",
	} {
		got, ok := nullField([]byte(in))
		if got != want || ok != (want != "") {
			t.Errorf("nullField(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
