package main

import (
	"bytes"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// FastServer is the gateway's fasthttp server: FastHandler with the
// server's limits (fastserver.NewServer) and a body limit per request that
// is decided from the request line and headers, before a byte of the
// body is read: httpapi.MaxBody (64 KiB) for every route, adminMaxBody
// only for POST /api/admin/events carrying the credentials of a caller
// who may create events (operator_auth.go, mayCreateEvents). A larger
// Content-Length is answered 413 at once; an anonymous client can no
// longer make the gateway buffer megabytes.
func (s *Server) FastServer() *fasthttp.Server {
	srv := fastserver.NewServer(s.FastHandler(), adminMaxBody)
	srv.HeaderReceived = s.bodyLimit
	return srv
}

var createEventPath = []byte("/api/admin/events")

func (s *Server) bodyLimit(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	path, _, _ := bytes.Cut(h.RequestURI(), []byte("?"))
	if string(h.Method()) == http.MethodPost && bytes.Equal(path, createEventPath) && s.mayCreateEvents(h) {
		return fasthttp.RequestConfig{MaxRequestBodySize: adminMaxBody}
	}
	return fasthttp.RequestConfig{MaxRequestBodySize: httpapi.MaxBody}
}
