package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// decodeError words a json.Unmarshal error for the client in JSON's terms:
// the field and the JSON type expected, never a Go type name
// ("cannot unmarshal array into Go value of type main.eventRequest" told
// a stranger how the server is written and helped nobody).
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("invalid JSON body: expected %s, got %s", jsonType(te.Type), te.Value)
		}
		return fmt.Errorf("field %q: expected %s, got %s", te.Field, jsonType(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON body: %s (at byte %d)", se.Error(), se.Offset)
	}
	msg := err.Error()
	if strings.Contains(msg, "Go ") || strings.Contains(msg, "main.") {
		return errors.New("invalid JSON body")
	}
	return fmt.Errorf("invalid JSON body: %s", msg)
}

// jsonType names the JSON type that decodes into t.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		if t.String() == "time.Time" {
			return "an RFC 3339 time string"
		}
		return "an object"
	}
	return "a JSON value"
}
