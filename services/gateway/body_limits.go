package main

import (
	"bytes"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// FastServer is the gateway's fasthttp server: FastHandler with the
// server's limits (httpapi.FastServer) and a body limit per request that
// is decided from the request line and headers, before a byte of the
// body is read: httpapi.MaxBody (64 KiB) for every route, adminMaxBody
// only for POST /api/admin/events carrying a valid admin token. A larger
// Content-Length is answered 413 at once; an anonymous client can no
// longer make the gateway buffer megabytes.
func (s *Server) FastServer() *fasthttp.Server {
	srv := httpapi.FastServer(s.FastHandler(), adminMaxBody)
	srv.HeaderReceived = s.bodyLimit
	return srv
}

var createEventPath = []byte("/api/admin/events")

func (s *Server) bodyLimit(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	path, _, _ := bytes.Cut(h.RequestURI(), []byte("?"))
	if string(h.Method()) == http.MethodPost && bytes.Equal(path, createEventPath) {
		id, err := s.Auth.Verify(auth.BearerToken(string(h.Peek("Authorization"))))
		if err == nil && id.Role == auth.RoleAdmin {
			return fasthttp.RequestConfig{MaxRequestBodySize: adminMaxBody}
		}
	}
	return fasthttp.RequestConfig{MaxRequestBodySize: httpapi.MaxBody}
}
