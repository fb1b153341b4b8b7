// Package admissiontest has a stand-in for the Announcer in the services'
// handler tests: it records what a handler asks to announce, release and
// notify, and fails on demand, without brokers.
package admissiontest

import (
	"context"
	"slices"
	"sync"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// Recorder records the calls of an announcer (the part of
// *admission.Announcer the HTTP services use). While an error is set with
// Fail, every call returns it and records nothing. Safe for concurrent use;
// the zero value is ready.
type Recorder struct {
	mu        sync.Mutex
	fail      error
	announced []booking.OutboxEntry
	released  []string
	notified  []messages.Notification
	waitlists []string
}

// Fail makes every call return err until Fail(nil).
func (r *Recorder) Fail(err error) {
	r.mu.Lock()
	r.fail = err
	r.mu.Unlock()
}

// Announce records entries.
func (r *Recorder) Announce(_ context.Context, _ string, entries []booking.OutboxEntry) error {
	return r.record(func() { r.announced = append(r.announced, entries...) })
}

// ReleaseSlot records reason.
func (r *Recorder) ReleaseSlot(_ context.Context, _, reason, _ string) error {
	return r.record(func() { r.released = append(r.released, reason) })
}

// Notify records n.
func (r *Recorder) Notify(_ context.Context, n messages.Notification) error {
	return r.record(func() { r.notified = append(r.notified, n) })
}

// AnnounceWaitlist records the event whose waitlist entries were to be
// announced.
func (r *Recorder) AnnounceWaitlist(_ context.Context, eventID string) error {
	return r.record(func() { r.waitlists = append(r.waitlists, eventID) })
}

// Waitlists returns the events AnnounceWaitlist was called for, in order.
func (r *Recorder) Waitlists() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.waitlists)
}

func (r *Recorder) record(add func()) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	add()
	return nil
}

// Announced returns the entries announced so far, in order.
func (r *Recorder) Announced() []booking.OutboxEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.announced)
}

// Released returns the reasons of the slots released so far, in order.
func (r *Recorder) Released() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.released)
}

// Notified returns the notifications sent so far, in order.
func (r *Recorder) Notified() []messages.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notified)
}
