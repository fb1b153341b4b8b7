package main

import (
	"net/http"
	"strconv"
	"time"

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
	// headMaxAge is how old the signed head served with the log's open
	// page may be.
	headMaxAge = 2 * time.Second
)

// drawEntry is one member of the closed pre-queue: its rank (1 first)
// and salted user hash.
type drawEntry struct {
	Rank     int64  `json:"rank"`
	UserHash string `json:"user_hash"`
}

// drawView is GET /api/events/{id}/draw.
type drawView struct {
	EventID string `json:"event_id"`
	// Status: none (no pre-queue), open (before the sales start; the
	// seed is secret), pending (started, the list not yet closed), drawn.
	Status     string      `json:"status"`
	Commit     string      `json:"commit,omitempty"`
	Seed       string      `json:"seed,omitempty"`
	Digest     string      `json:"digest,omitempty"`
	Count      int64       `json:"count"`
	SalesStart time.Time   `json:"sales_start,omitzero"`
	Page       int64       `json:"page"`
	PageSize   int64       `json:"page_size"`
	Entries    []drawEntry `json:"entries"`
	NextPage   *int64      `json:"next_page,omitempty"`
}

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
// inputs and the closed list in draw order, PageSize entries a page.
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
	ctx := c.Request.Context()
	e, err := s.Store.GetEvent(ctx, id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	v := drawView{EventID: id, Status: "none", Commit: e.DrawCommit, Seed: e.DrawSeed, SalesStart: e.SalesStart,
		Page: page, PageSize: fairness.PageSize, Entries: []drawEntry{}}
	if e.DrawCommit != "" {
		v.Status, v.Count = "open", e.Prequeued
		if e.DrawSeed != "" {
			v.Status = "pending"
		}
		digest, count, err := s.Store.ClosedDraw(ctx, id)
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		if digest != "" {
			v.Status, v.Digest, v.Count = "drawn", digest, count
			list, err := s.Store.DrawList(ctx, id, page*fairness.PageSize, fairness.PageSize)
			if err != nil {
				bookinghttp.Fail(c, err)
				return
			}
			for i, h := range list {
				v.Entries = append(v.Entries, drawEntry{Rank: page*fairness.PageSize + int64(i) + 1, UserHash: h})
			}
			if (page+1)*fairness.PageSize < count {
				next := page + 1
				v.NextPage = &next
			}
		}
	}
	if v.Status == "drawn" {
		c.Header("Cache-Control", cacheForever)
	} else {
		c.Header("Cache-Control", cacheOpen)
	}
	c.JSON(http.StatusOK, v)
}

// admissionsView is GET /api/events/{id}/admissions.
type admissionsView struct {
	EventID string           `json:"event_id"`
	After   int64            `json:"after"`
	Entries []fairness.Entry `json:"entries"`
	// Full: the page has PageSize entries and never changes.
	Full bool `json:"full"`
	// Size and Head: the log's length and last hash when read (open
	// page only); SignedHead: a signed head of the log (the
	// admission-pass key), at most headMaxAge old (open page only).
	Size       int64  `json:"size,omitempty"`
	Head       string `json:"head,omitempty"`
	SignedHead string `json:"signed_head,omitempty"`
}

// getAdmissions: GET /api/events/{id}/admissions?after=N, the admission
// log's entries after index N (0: from the first), PageSize at most.
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
	ctx := c.Request.Context()
	s.fairOnce.Do(func() { s.fairLog = fairness.NewLog(s.Store) })
	p, err := s.fairLog.Page(ctx, id, after)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	v := admissionsView{EventID: id, After: after, Entries: p.Entries, Full: len(p.Entries) == fairness.PageSize}
	if v.Entries == nil {
		v.Entries = []fairness.Entry{}
	}
	if v.Full {
		c.Header("Cache-Control", cacheForever)
		c.JSON(http.StatusOK, v)
		return
	}
	v.Size, v.Head = p.Size, p.Head
	if s.Pass != nil {
		now, err := s.Store.Clock(ctx, id)
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		if v.SignedHead, err = s.fairLog.SignedHead(ctx, id, s.Pass, now, headMaxAge); err != nil {
			bookinghttp.Fail(c, err)
			return
		}
	}
	c.Header("Cache-Control", cacheOpen)
	c.JSON(http.StatusOK, v)
}
