package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// Error is the JSON error body of every boxoffice HTTP service.
type Error struct {
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Timestamp  string `json:"timestamp"`
	Path       string `json:"path"`
}

// Codes of the error format (pkg/bookinghttp adds one per booking
// sentinel).
const (
	CodeInvalidBody      = "invalid_body"
	CodeInvalidArgument  = "invalid_argument"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeUnsupportedMediaType is a 415: an admin body not sent as
	// application/json (BindStrict).
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal"
	// CodeRateLimited is a 429 of the abuse limits, sent with Retry-After.
	CodeRateLimited = "rate_limited"
)

// Abort writes the JSON error and stops the handler chain.
func Abort(c *gin.Context, status int, code, message string) {
	c.AbortWithStatusJSON(status, newError(status, code, message, c.Request.URL.Path))
}

func newError(status int, code, message, path string) Error {
	return Error{
		StatusCode: status,
		Error:      http.StatusText(status),
		Code:       code,
		Message:    message,
		Timestamp:  time.Now().UTC().Format(time.RFC3339Nano),
		Path:       path,
	}
}

// Write writes the JSON error on a plain net/http response, for handlers
// that run outside gin and fasthttp (the notifier's WebSocket upgrade).
func Write(w http.ResponseWriter, status int, code, message, path string) {
	w.Header().Set("Content-Type", JSONContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(ErrorBody(status, code, message, path))
}

// ErrorBody is the JSON error as Abort writes it, for a server that
// writes its own answers (the gateway's fasthttp routes).
func ErrorBody(status int, code, message, path string) []byte {
	b, _ := json.Marshal(newError(status, code, message, path)) // strings and ints only: cannot fail
	return b
}

// NoRoute and NoMethod answer unknown paths and methods in the JSON format.
func NoRoute(c *gin.Context) { Abort(c, http.StatusNotFound, CodeNotFound, "no such endpoint") }

// NoMethod answers a known path with a wrong method.
func NoMethod(c *gin.Context) {
	Abort(c, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed on this endpoint")
}

// JSONContentType is the Content-Type of every JSON answer.
const JSONContentType = "application/json; charset=utf-8"
