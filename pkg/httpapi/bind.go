package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

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
			Abort(c, http.StatusRequestEntityTooLarge, CodeInvalidBody, tooLarge(max))
			return nil, false
		}
		Abort(c, http.StatusBadRequest, CodeInvalidBody, "could not read request body")
		return nil, false
	}
	return body, true
}

// tooLarge is the 413 message for a body over max bytes.
func tooLarge(max int64) string { return fmt.Sprintf("request body larger than %d bytes", max) }
