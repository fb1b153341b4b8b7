package main

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
)

// The public record of a sale's fairness (docs/fairness.md): the
// pre-queue's draw and the admission log. Anonymous, cacheable reads: a
// closed draw and a full page of the log never change and are cached for
// a year; what can still grow is cached for a second.

const (
	cacheForever = "public, max-age=31536000, immutable"
	cacheOpen    = "public, max-age=1"
)

// queryInt reads a non-negative integer query parameter (absent: 0);
// false when it answered 400.
func queryInt(c *gin.Context, name string) (int64, bool) {
	v := c.Query(name)
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, name+" must be a non-negative integer")
		return 0, false
	}
	return n, true
}

// getDraw: GET /api/events/{id}/draw?page=N, the pre-queue's draw: its
// inputs and the closed list in draw order (fairness.BuildDraw).
func (s *Server) getDraw(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	page, ok := queryInt(c, "page")
	if !ok {
		return
	}
	d, err := fairness.BuildDraw(c.Request.Context(), s.Store, id, page)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if d.Status == fairness.DrawDrawn {
		c.Header("Cache-Control", cacheForever)
	} else {
		c.Header("Cache-Control", cacheOpen)
	}
	c.JSON(http.StatusOK, d)
}

// getAdmissions: GET /api/events/{id}/admissions?after=N, the admission
// log's entries after index N (0: from the first), PageSize at most
// (fairness.Log.Doc).
func (s *Server) getAdmissions(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	after, ok := queryInt(c, "after")
	if !ok {
		return
	}
	var signer fairness.HeadSigner
	if s.Pass != nil {
		signer = s.Pass
	}
	d, err := s.fair().Doc(c.Request.Context(), id, after, signer, s.Store.Clock)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if d.Full {
		c.Header("Cache-Control", cacheForever)
	} else {
		c.Header("Cache-Control", cacheOpen)
	}
	c.JSON(http.StatusOK, d)
}
