package main

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// StatusRefunded is a paid payment whose money was given back.
const StatusRefunded = "refunded"

// refund: POST /v1/payments/{id}/refund — give a paid payment's money back
// (the gateway's admin refund of a refund_due order). Idempotent: a
// refunded payment answers 200 again. A payment that was never paid is a
// 409; an unknown one a 404. The body ({"amount"}) is informational: the
// sandbox refunds the whole amount.
func (s *Sandbox) refund(c *gin.Context) {
	id := c.Param("id")
	s.mu.Lock()
	rec, ok := s.pays[id]
	if !ok {
		s.mu.Unlock()
		abortNotFound(c)
		return
	}
	if rec.Status != StatusPaid && rec.Status != StatusRefunded {
		status := rec.Status
		s.mu.Unlock()
		httpapi.Abort(c, http.StatusConflict, "not_refundable", "the payment is "+status+", not paid")
		return
	}
	rec.Status = StatusRefunded
	amount := rec.Req.Amount
	s.mu.Unlock()
	c.JSON(http.StatusOK, gin.H{"payment_id": id, "status": StatusRefunded, "amount": amount})
}
