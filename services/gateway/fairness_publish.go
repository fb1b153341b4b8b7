package main

import (
	"context"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// admissionLogInterval is how often the gateway publishes new
// admission-log entries on Kafka.
const admissionLogInterval = 2 * time.Second

// fair returns the gateway's admission-log chains.
func (s *Server) fair() *fairness.Log {
	s.fairOnce.Do(func() { s.fairLog = fairness.NewLog(s.Store) })
	return s.fairLog
}

// publishAdmissionLogs publishes every event's admission-log entries not
// yet on Kafka as admission_logged facts, a page at a time (confirmed,
// acks=all), and then moves the event's cursor
// (booking.Store.SetAdmissionLogPublished). Every gateway runs it: two
// that race publish the same facts, with the same ids. It returns how
// many entries it published.
func (s *Server) publishAdmissionLogs(ctx context.Context) (int, error) {
	ids, err := s.Store.EventIDs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		for {
			done, err := s.Store.AdmissionLogPublished(ctx, id)
			if err != nil {
				return n, err
			}
			p, err := s.fair().Page(ctx, id, done)
			if err != nil {
				return n, fmt.Errorf("admission log of %s: %w", id, err)
			}
			if len(p.Entries) == 0 {
				break
			}
			evs := make([]events.Event, len(p.Entries))
			for i, e := range p.Entries {
				evs[i] = events.AdmissionLogged(id, e.Index, e.Seq, e.UserHash, e.Reason, e.Prev, e.Hash, time.UnixMilli(e.AtMs))
			}
			if err := s.Kafka.Publish(ctx, evs...); err != nil {
				return n, fmt.Errorf("publish admission_logged: %w", err)
			}
			if err := s.Store.SetAdmissionLogPublished(ctx, id, p.Entries[len(p.Entries)-1].Index); err != nil {
				return n, err
			}
			n += len(p.Entries)
			if len(p.Entries) < fairness.PageSize {
				break
			}
		}
	}
	return n, nil
}
