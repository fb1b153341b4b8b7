package main

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// consoleRoutes registers the admin routes the operator console adds to
// the ledger's: finding orders across events (the live document is a
// fasthttp route, console_live.go).
func (s *Server) consoleRoutes(adm *gin.RouterGroup) {
	if s.Ledger == nil {
		return
	}
	adm.GET("/orders", s.findOrders)
}

// findOrders: GET /api/admin/orders?user_id=… or ?payment_id=… — a user's
// orders in every event, newest first (?limit=, default 100, at most
// 1000), or the order of a payment id (none or one).
func (s *Server) findOrders(c *gin.Context) {
	user, payment := strings.TrimSpace(c.Query("user_id")), strings.TrimSpace(c.Query("payment_id"))
	if (user == "") == (payment == "") {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "give one of user_id and payment_id")
		return
	}
	for _, v := range []struct{ name, v string }{{"user_id", user}, {"payment_id", payment}} {
		if v.v != "" && !ids.Valid(v.v) {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument,
				v.name+" must be 1-128 printable characters without spaces, braces or '|'")
			return
		}
	}
	n, ok := limitParam(c, 100, 1000)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	orders := []ledger.Order{}
	if user != "" {
		found, err := s.Ledger.UserOrders(ctx, user, n)
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		orders = append(orders, found...)
	} else {
		o, err := s.Ledger.OrderByPayment(ctx, payment)
		switch {
		case errors.Is(err, ledger.ErrOrderNotFound):
		case err != nil:
			bookinghttp.Fail(c, err)
			return
		default:
			orders = append(orders, o)
		}
	}
	c.JSON(http.StatusOK, gin.H{"orders": orders})
}
