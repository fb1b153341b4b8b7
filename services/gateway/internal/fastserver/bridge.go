package fastserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// ServeRequest serves one net/http request through a fasthttp handler in
// process and writes the response to w: tests drive a service's real
// handler with httptest requests and recorders this way.
func ServeRequest(h fasthttp.RequestHandler, w http.ResponseWriter, r *http.Request) {
	var req fasthttp.Request
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.URL.RequestURI())
	req.SetHost(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		req.SetBody(body)
	}
	var rc fasthttp.RequestCtx
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	h(&rc)
	for k, v := range rc.Response.Header.All() {
		w.Header().Add(string(k), string(v))
	}
	w.WriteHeader(rc.Response.StatusCode())
	_, _ = w.Write(rc.Response.Body())
}

// netHTTP serves fasthttp requests with a net/http handler. Unlike
// fasthttpadaptor, whose strings point into fasthttp's reused buffers (a
// method kept as a metric label, or a request id kept by a background
// publisher, would change under its holder), it copies what it hands on. A
// panic that escapes h (gin's recovery re-panics http.ErrAbortHandler)
// becomes a JSON 500 and a closed connection, not a crashed process.
func netHTTP(log *zap.Logger, h http.Handler) fasthttp.RequestHandler {
	return func(rc *fasthttp.RequestCtx) {
		r, err := toRequest(rc)
		if err != nil {
			writeJSON(rc, http.StatusBadRequest, httpapi.ErrorBody(http.StatusBadRequest, httpapi.CodeInvalidArgument, "malformed request URI", string(rc.Path())))
			return
		}
		w := &responseWriter{rc: rc, h: http.Header{}}
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					log.Error("handler panic", zap.String("panic", fmt.Sprint(v)), zap.ByteString("stack", debug.Stack()))
				}
				internalError(rc, w.h.Get(httpapi.HeaderRequestID), r.URL.Path)
				rc.SetConnectionClose()
			}
		}()
		h.ServeHTTP(w, r)
		if !w.wrote {
			w.WriteHeader(http.StatusOK)
		}
	}
}

// toRequest is rc as a net/http server request, every string copied.
func toRequest(rc *fasthttp.RequestCtx) (*http.Request, error) {
	uri := string(rc.RequestURI())
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, err
	}
	body := append([]byte(nil), rc.PostBody()...)
	r := &http.Request{
		Method:        string(rc.Method()),
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        make(http.Header, rc.Request.Header.Len()),
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Host:          string(rc.Host()),
		RemoteAddr:    rc.RemoteAddr().String(),
		RequestURI:    uri,
	}
	if !rc.Request.Header.IsHTTP11() {
		r.Proto, r.ProtoMinor = "HTTP/1.0", 0
	}
	for k, v := range rc.Request.Header.All() {
		if name := string(k); name != "Host" {
			r.Header.Add(name, string(v))
		}
	}
	return r.WithContext(context.Background()), nil
}

// responseWriter writes a net/http handler's response into rc (fasthttp
// buffers it whole and sets Content-Length).
type responseWriter struct {
	rc    *fasthttp.RequestCtx
	h     http.Header
	wrote bool
	sniff bool // no Content-Type given: net/http sniffs the first Write
}

func (w *responseWriter) Header() http.Header { return w.h }

func (w *responseWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.rc.SetStatusCode(status)
	for k, vs := range w.h {
		if k == "Content-Length" || k == "Transfer-Encoding" {
			continue
		}
		for _, v := range vs {
			w.rc.Response.Header.Add(k, v)
		}
	}
	w.sniff = w.h.Get("Content-Type") == ""
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.sniff && len(p) > 0 {
		w.sniff = false
		w.rc.Response.Header.SetContentType(http.DetectContentType(p))
	}
	return w.rc.Write(p)
}
