package main

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
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
	s.receiptsOnce.Do(func() {
		s.receipts = receipt.NewBatcher(s.Pass)
		if s.receipts != nil && s.Store != nil {
			s.Store.OnJoins(s.signJoins)
		}
	})
	return s.receipts
}

// signJoins is the booking pipeline's JoinsHook: the receipts of the
// queued joins of eventID one Redis round trip answered, signed there
// under one root, so that a join waits for no hand-off to the batcher. A
// join it leaves without one (the event's draw commitment not read within
// the progress document's age, a signing error) gets its receipt from the
// batcher (fastReceipt), which reads the commitment and reports errors.
func (s *Server) signJoins(eventID string, users []string, joins []*booking.JoinResult) {
	snap := s.drawCommits.cached(eventID)
	if snap == nil || time.Since(snap.at) >= s.drawCommitMaxAge() {
		return
	}
	js := make([]receipt.Join, 0, len(joins))
	for i, j := range joins {
		if wantsReceipt(j) {
			js = append(js, receipt.Join{EventID: eventID, Seq: j.Sequence, At: j.At, DrawCommit: snap.v, UserID: users[i]})
		}
	}
	out := make([]receipt.Receipt, len(js))
	if len(js) == 0 || s.receipts.SignNow(js, out) != nil {
		return
	}
	k := 0
	for _, j := range joins {
		if wantsReceipt(j) {
			j.Attached = &out[k]
			k++
		}
	}
}

// wantsReceipt reports whether a join's answer carries a receipt: a
// queued one (a pre-queued user's place is drawn at the start: no
// receipt until then).
func wantsReceipt(res *booking.JoinResult) bool {
	return res.State == booking.StateWaiting && res.PrequeuedUntil.IsZero()
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
func (s *Server) fastReceipt(c *fastserver.Ctx, eventID, user string, seq int64, at time.Time, attached any, dst **receipt.Receipt) bool {
	if s.Pass == nil {
		return true
	}
	if r, ok := attached.(*receipt.Receipt); ok { // signed in the pipeline (signJoins)
		*dst = r
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
	snap, err := s.drawCommits.get(ctx, eventID, s.drawCommitMaxAge(), func(ctx context.Context, _ *snapshot[string]) (*snapshot[string], error) {
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

// drawCommitMaxAge is how long a draw commitment read is used: the
// progress document's age.
func (s *Server) drawCommitMaxAge() time.Duration {
	if s.ProgressMaxAge <= 0 {
		return defaultProgressMaxAge
	}
	return s.ProgressMaxAge
}
