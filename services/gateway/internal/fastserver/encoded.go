package fastserver

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// An answer that many clients fetch unchanged (a per-event snapshot of the
// gateway, a static file of the web pages) is encoded once: its bytes, their
// gzip encoding, and an ETag for each. Serving it is then a choice between
// prepared bytes, with no per-request encoding or compression.

// Encoded is an answer prepared once for many readers. Its byte slices are
// shared and must not be modified.
type Encoded struct {
	Body []byte
	// Gzip is Body gzip-compressed, nil when that is not smaller.
	Gzip []byte
	// ETag is a strong validator of Body, a hash of its bytes, so that
	// every instance gives the same ETag for the same answer. The gzip
	// encoding, another representation, has its own (GzipETag).
	ETag     string
	GzipETag string
}

// Encode prepares body: its ETag and, unless level is
// gzip.NoCompression, its gzip encoding at level. gzip.BestSpeed is the
// level for answers re-encoded every second: above it the standard
// library's compressor is ten to forty times slower on a seat map of
// mixed statuses for a few percent fewer bytes (BenchmarkEncodeSeatMap).
func Encode(body []byte, level int) *Encoded {
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:12])
	e := &Encoded{Body: body, ETag: `"` + tag + `"`}
	if level == gzip.NoCompression || len(body) == 0 {
		return e
	}
	if gz := gzipBytes(body, level); gz != nil && len(gz) < len(body) {
		e.Gzip, e.GzipETag = gz, `"`+tag+`-gzip"`
	}
	return e
}

// gzipWriters pools one compressor per level (gzip.HuffmanOnly to
// gzip.BestCompression): a compressor holds hundreds of KiB of tables,
// too much to allocate for every snapshot of every event.
var gzipWriters [gzip.BestCompression - gzip.HuffmanOnly + 1]sync.Pool

func gzipBytes(b []byte, level int) []byte {
	if level < gzip.HuffmanOnly || level > gzip.BestCompression {
		return nil
	}
	var buf bytes.Buffer
	pool := &gzipWriters[level-gzip.HuffmanOnly]
	zw, _ := pool.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(&buf, level) // level checked above
	} else {
		zw.Reset(&buf)
	}
	_, _ = zw.Write(b) // a bytes.Buffer does not fail
	_ = zw.Close()
	pool.Put(zw)
	return buf.Bytes()
}

// Select returns the representation for a request's Accept-Encoding: the
// gzip encoding when there is one and the client accepts it (coding
// "gzip"), else the body (coding "").
func (e *Encoded) Select(acceptEncoding string) (body []byte, etag, coding string) {
	if e.Gzip != nil && AcceptsGzip(acceptEncoding) {
		return e.Gzip, e.GzipETag, "gzip"
	}
	return e.Body, e.ETag, ""
}

// NotModified reports whether an If-None-Match header names either
// representation's ETag (or is "*"): the client has this answer, in one
// encoding or the other. Comparison is weak, as RFC 9110 asks for
// If-None-Match.
func (e *Encoded) NotModified(ifNoneMatch string) bool {
	if ifNoneMatch == "" {
		return false
	}
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == e.ETag || (e.GzipETag != "" && t == e.GzipETag) {
			return true
		}
	}
	return false
}

// AcceptsGzip reports whether an Accept-Encoding header lists gzip (or *)
// without q=0.
func AcceptsGzip(header string) bool {
	for _, e := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(e), ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, "gzip") && name != "*" {
			continue
		}
		if q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// ServeEncoded answers with doc as JSON, publicly cacheable for maxAge
// seconds: ETag and Cache-Control, Vary: Accept-Encoding (the answer may
// come gzip-compressed), a bodiless 304 when If-None-Match names its ETag,
// otherwise the prepared bytes of the representation the client accepts,
// sent without a copy.
func (c *Ctx) ServeEncoded(doc *Encoded, maxAgeSeconds int) {
	body, etag, coding := doc.Select(string(c.Request.Header.Peek("Accept-Encoding")))
	h := &c.Response.Header
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(maxAgeSeconds))
	h.Set("Vary", "Accept-Encoding")
	if doc.NotModified(string(c.Request.Header.Peek("If-None-Match"))) {
		c.SetStatusCode(http.StatusNotModified)
		return
	}
	if coding != "" {
		h.Set("Content-Encoding", coding)
	}
	c.SetStatusCode(http.StatusOK)
	c.SetContentType(httpapi.JSONContentType)
	c.Response.SetBodyRaw(body)
}
