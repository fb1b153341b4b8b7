package main

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/receipt"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// The join receipt (pkg/receipt): a queued join's answer carries
// "receipt", its leaf (event, join sequence, join time, the event's draw
// commitment, a salted hash of the user) with its inclusion path in the
// tree of the joins this instance answered together, and that tree's
// root signed once with the pass's current key (PASS_KEYS). A fan
// verifies it offline against GET /.well-known/jwks.json
// (docs/admission-pass.md, "The join receipt"). Without PASS_KEYS there
// is none.

// receiptBatcher is the instance's receipt batcher, started with the
// first receipt (nil without a pass key).
func (s *Server) receiptBatcher() *receipt.Batcher {
	s.receiptsOnce.Do(func() { s.receipts = receipt.NewBatcher(s.Pass) })
	return s.receipts
}

// closeReceipts stops the receipt batcher (joins still answered are
// signed alone).
func (s *Server) closeReceipts() {
	s.receiptsOnce.Do(func() {}) // none is started after this
	s.receipts.Close()
}

// fastReceipt issues the receipt of user's queued join of eventID into
// *dst; false when it answered (an error). at is the join's time
// (Redis's clock).
func (s *Server) fastReceipt(c *fastserver.Ctx, eventID, user string, seq int64, at time.Time, dst **receipt.Receipt) bool {
	if s.Pass == nil {
		return true
	}
	ctx := c.Context()
	commit, err := s.drawCommit(ctx, eventID)
	if err == nil {
		var r receipt.Receipt
		r, err = s.receiptBatcher().Issue(ctx, receipt.Join{EventID: eventID, Seq: seq, At: at, DrawCommit: commit, UserID: user})
		*dst = &r
	}
	if err != nil {
		c.Logger().Error("sign join receipt", zap.Error(err))
		c.Abort(http.StatusInternalServerError, httpapi.CodeInternal, "could not sign the join receipt")
		return false
	}
	return true
}

// drawCommit is eventID's draw commitment ("" when it has none), read
// with the event at most once per progress document's age: it is fixed
// when set (booking.Event.DrawCommit), so a receipt never names another.
func (s *Server) drawCommit(ctx context.Context, eventID string) (string, error) {
	maxAge := s.ProgressMaxAge
	if maxAge <= 0 {
		maxAge = defaultProgressMaxAge
	}
	snap, err := s.drawCommits.get(ctx, eventID, maxAge, func(ctx context.Context, _ *snapshot[string]) (*snapshot[string], error) {
		start := time.Now()
		e, err := s.Store.GetEvent(ctx, eventID)
		if err != nil {
			return nil, err
		}
		return &snapshot[string]{at: start, v: e.DrawCommit}, nil
	})
	if err != nil {
		return "", err
	}
	return snap.v, nil
}
