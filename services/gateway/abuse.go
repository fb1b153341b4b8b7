package main

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ratelimit"
)

// The abuse limits (pkg/ratelimit): every authenticated request counts
// against its user's requests per second; a join also counts against its
// client IP's joins per minute. Past a limit the answer is 429 with
// Retry-After in the JSON error format, code rate_limited. A Redis error
// in the limiter lets the request through (logged): the route's own
// script then answers for Redis.

// CodeRateLimited is the error code of a 429.
const CodeRateLimited = "rate_limited"

// limitFast applies the limits to a fast route's request; false when it
// answered 429.
func (s *Server) limitFast(c *httpapi.FastCtx, user string, join bool) bool {
	if s.Limits == nil {
		return true
	}
	var ip netip.Addr
	if join {
		ip = s.fastClientIP(c)
	}
	d := s.limitDecision(c.Context(), c.Logger, user, ip, join)
	if d.Allowed {
		return true
	}
	c.Response.Header.Set("Retry-After", strconv.FormatInt(d.RetryAfterSeconds(), 10))
	c.Abort(http.StatusTooManyRequests, CodeRateLimited, limitMessage(d, join))
	return false
}

// limitUser is the gin middleware of the authenticated routes (after
// httpapi.Authenticate).
func (s *Server) limitUser() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.Limits == nil {
			return
		}
		d := s.limitDecision(c.Request.Context(), func() *zap.Logger { return httpapi.Logger(c) },
			httpapi.Identity(c).UserID, netip.Addr{}, false)
		if !d.Allowed {
			c.Header("Retry-After", strconv.FormatInt(d.RetryAfterSeconds(), 10))
			httpapi.Abort(c, http.StatusTooManyRequests, CodeRateLimited, limitMessage(d, false))
		}
	}
}

func (s *Server) limitDecision(ctx context.Context, log func() *zap.Logger, user string, ip netip.Addr, join bool) ratelimit.Decision {
	if join {
		d, err := s.Limits.Join(ctx, ip)
		if err != nil {
			log().Warn("rate limit check failed; request let through", zap.Error(err))
		} else if !d.Allowed {
			return d
		}
	}
	d, err := s.Limits.User(ctx, user)
	if err != nil {
		log().Warn("rate limit check failed; request let through", zap.Error(err))
		return ratelimit.Decision{Allowed: true}
	}
	return d
}

func limitMessage(d ratelimit.Decision, join bool) string {
	what := "too many requests for this user"
	if join {
		what = "too many requests (joins from this address or requests for this user)"
	}
	return what + "; retry after " + strconv.FormatInt(d.RetryAfterSeconds(), 10) + " s"
}

// fastClientIP is the client's address (X-Forwarded-For only from a
// trusted proxy).
func (s *Server) fastClientIP(c *httpapi.FastCtx) netip.Addr {
	var peer netip.Addr
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		peer, _ = netip.AddrFromSlice(ta.IP)
	}
	if len(s.Proxies) == 0 {
		return peer.Unmap()
	}
	return s.Proxies.ClientIP(peer, c.Header("X-Forwarded-For"))
}
