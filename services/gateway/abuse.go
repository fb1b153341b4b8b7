package main

import (
	"errors"
	"net"
	"net/netip"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// The abuse limits (pkg/ratelimit's policy, Server.Limits): every
// authenticated request counts against its user's requests per second; a
// join also counts against its client IP's joins per minute. The booking
// scripts check them in the same call as the join or position read they
// guard (booking.Limit), so a limit costs no round trip of its own; the
// other booking routes count with one booking.Store.CheckLimits call.
// Past a limit the answer is 429 with Retry-After in the JSON error
// format, code rate_limited (bookinghttp.Fail).

// joinLimits are the limits a join of user from c's client counts against.
func (s *Server) joinLimits(c *fastserver.Ctx, user string) (ip, perUser booking.Limit) {
	if s.Limits.JoinsPerMinutePerIP > 0 {
		ip = s.Limits.IP(s.fastClientIP(c))
	}
	return ip, s.Limits.User(user)
}

// limitRequest counts a gin booking route's request against its user's
// limit on eventID; false when it answered 429. A Redis error in the
// check lets the request through (logged): the route's own script then
// answers for Redis.
func (s *Server) limitRequest(c *gin.Context, eventID string) bool {
	l := s.Limits.User(httpapi.Identity(c).UserID)
	if l.Rate <= 0 {
		return true
	}
	err := s.Store.CheckLimits(c.Request.Context(), eventID, l)
	switch {
	case errors.Is(err, booking.ErrRateLimited), errors.Is(err, booking.ErrInvalidArgument):
		bookinghttp.Fail(c, err)
		return false
	case err != nil:
		httpapi.Logger(c).Warn("rate limit check failed; request let through", zap.Error(err))
	}
	return true
}

// fastClientIP is the client's address (X-Forwarded-For only from a
// trusted proxy).
func (s *Server) fastClientIP(c *fastserver.Ctx) netip.Addr {
	var peer netip.Addr
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		peer, _ = netip.AddrFromSlice(ta.IP)
	}
	if len(s.Proxies) == 0 {
		return peer.Unmap()
	}
	return s.Proxies.ClientIP(peer, c.Header("X-Forwarded-For"))
}
