package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// MaxBody bounds every request body read by Bind and ReadBody.
const MaxBody = 64 << 10

// Validator is implemented by request bodies that check their own fields.
type Validator interface {
	Validate() error
}

// Bind decodes the JSON request body into v and validates it. On any
// problem (empty, too large, not JSON, wrong types, trailing data, a
// failed Validate) it writes a 400 and returns false; it never lets a
// client's body become a 500. Unknown fields are ignored.
func Bind(c *gin.Context, v any) bool { return BindMax(c, v, MaxBody) }

// BindMax is Bind with a body limit of max bytes.
func BindMax(c *gin.Context, v any, max int64) bool {
	body, ok := ReadBodyMax(c, max)
	if !ok {
		return false
	}
	if err := DecodeJSON(body, v); err != nil {
		Abort(c, http.StatusBadRequest, CodeInvalidBody, err.Error())
		return false
	}
	return true
}

// BindStrict is BindMax for the admin API, which reads bodies as
// docs/openapi.yaml describes them: the body must be sent as
// application/json (415 otherwise) and no value in it may be null (400
// naming the field: a null would otherwise read as an absent field, so
// {"capacity":null} would change nothing and still answer 200).
func BindStrict(c *gin.Context, v any, max int64) bool {
	if mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type")); err != nil || mt != "application/json" {
		Abort(c, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "the body must be sent as Content-Type: application/json")
		return false
	}
	body, ok := ReadBodyMax(c, max)
	if !ok {
		return false
	}
	if field, found := nullField(body); found {
		Abort(c, http.StatusBadRequest, CodeInvalidBody, fmt.Sprintf("field %q is null: leave it out, or give a value", field))
		return false
	}
	if err := DecodeJSON(body, v); err != nil {
		Abort(c, http.StatusBadRequest, CodeInvalidBody, err.Error())
		return false
	}
	return true
}

// nullField finds the first null in a JSON document and returns where it
// is ("sections[0].rows"); false when there is none, when the document
// itself is null, or when it does not parse (DecodeJSON then says why).
func nullField(body []byte) (string, bool) {
	type frame struct {
		object, wantKey bool
		key             string
		index           int // elements of an array so far
	}
	var stack []*frame
	where := func() string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case !f.object:
				fmt.Fprintf(&b, "[%d]", f.index-1)
			case i > 0:
				b.WriteString("." + f.key)
			default:
				b.WriteString(f.key)
			}
		}
		return b.String()
	}
	// done marks the value of the innermost object or array as read
	done := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false // the end, or a syntax error
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch {
		case top != nil && top.object && top.wantKey:
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				done()
			} else {
				top.key, top.wantKey = tok.(string), false
			}
		case tok == json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default: // a value
			if top != nil && !top.object {
				top.index++
			}
			switch tok {
			case nil:
				return where(), top != nil
			case json.Delim('{'):
				stack = append(stack, &frame{object: true, wantKey: true})
			case json.Delim('['):
				stack = append(stack, &frame{})
			default:
				done()
			}
		}
	}
}

// DecodeJSON decodes exactly one JSON value from body into v and runs
// Validate when v has one.
func DecodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("request body is empty; expected a JSON object")
	}
	// json.Unmarshal takes exactly one value: trailing data is a syntax
	// error ("invalid character 'x' after top-level value")
	if err := json.Unmarshal(body, v); err != nil {
		return decodeError(err)
	}
	if val, ok := v.(Validator); ok {
		if err := val.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// ReadBody reads the raw body (at most MaxBody bytes); on failure it writes
// a 400 (or 413) and returns false. Webhooks read the raw body this way to
// verify a signature before decoding.
func ReadBody(c *gin.Context) ([]byte, bool) { return ReadBodyMax(c, MaxBody) }

// ReadBodyMax is ReadBody with a limit of max bytes.
func ReadBodyMax(c *gin.Context, max int64) ([]byte, bool) {
	r := http.MaxBytesReader(c.Writer, c.Request.Body, max)
	body, err := io.ReadAll(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			Abort(c, http.StatusRequestEntityTooLarge, CodeInvalidBody, TooLarge(max))
			return nil, false
		}
		Abort(c, http.StatusBadRequest, CodeInvalidBody, "could not read request body")
		return nil, false
	}
	return body, true
}

// TooLarge is the 413 message for a body over max bytes.
func TooLarge(max int64) string { return fmt.Sprintf("request body larger than %d bytes", max) }
