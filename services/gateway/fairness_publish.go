package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// admissionLogInterval is how often the gateway publishes new
// admission-log entries on Kafka.
const admissionLogInterval = 2 * time.Second

// fair returns the gateway's admission-log chains, with the ledger as
// their archive (the entries before a rebuild of Redis) and their signed
// heads covering only what the ledger recorded.
func (s *Server) fair() *fairness.Log {
	s.fairOnce.Do(func() {
		var archive fairness.Archive
		if s.Ledger != nil {
			archive = s.Ledger
		}
		s.fairLog = fairness.NewLog(s.Store, archive)
		if s.Ledger != nil {
			s.fairLog.Recorded = s.Store // heads sign what the ledger holds
		}
	})
	return s.fairLog
}

// publishAdmissionLogs hands every event's admission-log entries not yet
// handed on to the ledger (the record a rebuild of Redis continues from)
// and then to Kafka as admission_logged facts (confirmed, acks=all), a
// page at a time, and then moves the event's cursor
// (booking.Store.SetAdmissionLogPublished). Every gateway runs it: two
// that race record and publish the same entries, with the same ids. An
// event that fails (say its log forked from the ledger's record) does not
// hold the others back: it returns how many entries it handed on and the
// failures joined.
func (s *Server) publishAdmissionLogs(ctx context.Context) (int, error) {
	ids, err := s.Store.EventIDs(ctx)
	if err != nil {
		return 0, err
	}
	var sinks []fairness.Sink
	if s.Ledger != nil {
		sinks = append(sinks, s.Ledger.RecordAdmissions)
	}
	sinks = append(sinks, func(ctx context.Context, id, _ string, es []fairness.Entry) error {
		evs := make([]events.Event, len(es))
		for i, e := range es {
			evs[i] = events.AdmissionLogged(id, e.Index, e.Seq, e.UserHash, e.Reason, e.Prev, e.Hash, time.UnixMilli(e.AtMs))
		}
		if err := s.Kafka.Publish(ctx, evs...); err != nil {
			return fmt.Errorf("publish admission_logged: %w", err)
		}
		return nil
	})
	n := 0
	var errs []error
	for _, id := range ids {
		k, err := s.fair().HandOn(ctx, id, s.Store, sinks...)
		n += k
		if errors.Is(err, ledger.ErrLogGap) {
			// entries handed on before the ledger recorded them: hand
			// the log on again from the first (both sinks are idempotent)
			err = s.Store.SetAdmissionLogPublished(ctx, id, 0)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
