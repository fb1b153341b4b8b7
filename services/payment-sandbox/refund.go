package main

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// StatusRefunded is a paid payment whose money was all given back.
const StatusRefunded = "refunded"

// maxRefundKey bounds an Idempotency-Key.
const maxRefundKey = 128

type refundBody struct {
	Amount int64 `json:"amount"`
}

// refund: POST /v1/payments/{id}/refund — give a paid payment's money
// back.
//
// With an Idempotency-Key header, the body's amount (1 up to what is left
// of the payment) is refunded once per key: the same key again answers
// the same refund (200) and gives nothing more; the same key with another
// amount is a 409 idempotency_key_reused, more than is left a 409
// refund_exceeds_payment. The payment becomes refunded when all of it is
// given back. Without the header the whole payment is refunded (what is
// left of it), idempotently by payment id: a refunded payment answers 200
// again.
//
// A payment that was never paid is a 409 not_refundable; an unknown one a
// 404.
func (s *Sandbox) refund(c *gin.Context) {
	id := c.Param("id")
	key := c.GetHeader(payment.IdempotencyKeyHeader)
	if len(key) > maxRefundKey {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "Idempotency-Key must be at most 128 characters")
		return
	}
	var body refundBody
	if key != "" {
		if !httpapi.Bind(c, &body) {
			return
		}
		if body.Amount < 1 {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidBody, "amount must be at least 1 with an Idempotency-Key")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.pays[id]
	if !ok {
		abortNotFound(c)
		return
	}
	if rec.Status != StatusPaid && rec.Status != StatusRefunded {
		httpapi.Abort(c, http.StatusConflict, "not_refundable", "the payment is "+rec.Status+", not paid")
		return
	}
	if key == "" { // the whole payment (what is left of it; all of it again for a refunded one)
		amount := rec.Req.Amount - rec.Refunded
		if rec.Status == StatusRefunded {
			amount = rec.Req.Amount
		}
		rec.Refunded = rec.Req.Amount
		rec.Status = StatusRefunded
		c.JSON(http.StatusOK, payment.Refund{PaymentID: id, Status: StatusRefunded, Amount: amount, RefundedTotal: rec.Refunded})
		return
	}
	if prev, ok := rec.Refunds[key]; ok {
		if prev != body.Amount {
			httpapi.Abort(c, http.StatusConflict, "idempotency_key_reused", "this Idempotency-Key was used for a refund of another amount")
			return
		}
		c.JSON(http.StatusOK, payment.Refund{PaymentID: id, Status: rec.Status, Amount: prev, RefundID: key, RefundedTotal: rec.Refunded})
		return
	}
	if body.Amount > rec.Req.Amount-rec.Refunded {
		httpapi.Abort(c, http.StatusConflict, "refund_exceeds_payment", "the amount is more than what is left of the payment")
		return
	}
	if rec.Refunds == nil {
		rec.Refunds = map[string]int64{}
	}
	rec.Refunds[key] = body.Amount
	rec.Refunded += body.Amount
	if rec.Refunded == rec.Req.Amount {
		rec.Status = StatusRefunded
	}
	c.JSON(http.StatusOK, payment.Refund{PaymentID: id, Status: rec.Status, Amount: body.Amount, RefundID: key, RefundedTotal: rec.Refunded})
}
