package main

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/report"
)

// reportRoutes registers GET /api/admin/events/{id}/report.
func (s *Server) reportRoutes(adm *gin.RouterGroup) {
	adm.GET("/events/:id/report", s.eventReport)
}

// eventReport: GET /api/admin/events/{id}/report, the sale's report kept by
// the report consumer (pkg/report) and, with a ledger, what each phase of
// the sale sold: JSON, or CSV with ?format=csv or Accept: text/csv. 404
// event_not_found for an unknown event.
func (s *Server) eventReport(c *gin.Context) {
	id := c.Param("id")
	ctx := c.Request.Context()
	if !ids.ValidEvent(id) { // the one event id rule: malformed is unknown
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	if _, err := s.Store.GetEvent(ctx, id); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	r, err := report.Read(ctx, s.Redis, s.Prefix, id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if s.Ledger != nil {
		// what each phase sold: the ledger records the phase with each order
		ps, err := s.Ledger.SalesByPhase(ctx, id)
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		r.ByPhase = make([]report.PhaseSales, len(ps))
		for i, p := range ps {
			r.ByPhase[i] = report.PhaseSales(p)
		}
		// and each channel: the fans' ("") and the box office's
		cs, err := s.Ledger.SalesByChannel(ctx, id)
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		r.ByChannel = make([]report.ChannelSales, len(cs))
		for i, p := range cs {
			r.ByChannel[i] = report.ChannelSales(p)
		}
	}
	switch f := c.Query("format"); {
	case f == "csv" || (f == "" && strings.Contains(c.GetHeader("Accept"), "text/csv")):
		c.Header("Content-Disposition", `attachment; filename="report.csv"`)
		c.Data(http.StatusOK, "text/csv; charset=utf-8", []byte(r.CSV()))
	case f == "" || f == "json":
		c.JSON(http.StatusOK, r)
	default:
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "format must be json or csv")
	}
}
