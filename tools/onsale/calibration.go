package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/boxoffice/boxoffice/pkg/chance"
)

// The chance of a ticket, checked against what happened: each queued
// user's chance as its page shows it at the first progress poll after the
// join (the document's chance parameters at seq - served - 1 users ahead,
// pkg/chance), and whether its turn came while seats were left (admitted,
// not found sold out).

// Outcomes of a user, by index (calibration.outcome).
const (
	outcomeNone     = iota // not reached (still waiting at the end)
	outcomeAdmitted        // its turn came with seats left
	outcomeMissed          // sold out, or the turn lost
)

// calibration records the chance each queued user was shown and how its
// wait ended.
type calibration struct {
	shown   []atomic.Int32 // chance in hundredths + 1 (0: none shown)
	outcome []atomic.Int32
	mu      sync.Mutex
	pending []int // queued users not yet shown a chance
	doc     atomic.Pointer[progressDoc]
	passed  atomic.Int64 // users whose sequence was already served at their first poll
}

// progressDoc is what the calibration reads of a progress document.
type progressDoc struct {
	Served int64         `json:"served"`
	Chance chance.Params `json:"chance"`
}

func newCalibration(users int) *calibration {
	return &calibration{shown: make([]atomic.Int32, users), outcome: make([]atomic.Int32, users)}
}

// queued notes user i, queued: the next poll shows it a chance.
func (c *calibration) queued(i int) {
	c.mu.Lock()
	c.pending = append(c.pending, i)
	c.mu.Unlock()
}

// polled shows every pending user its chance from the document the poll
// read (doc, or the last one on a 304); seqs are the users' sequences.
func (c *calibration) polled(doc *progressDoc, seqs []atomic.Int64) {
	if doc != nil {
		c.doc.Store(doc)
	} else if doc = c.doc.Load(); doc == nil {
		return
	}
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, i := range pending {
		seq := seqs[i].Load()
		if seq <= doc.Served {
			c.passed.Add(1)
			continue
		}
		c.shown[i].Store(int32(doc.Chance.Chance(seq-doc.Served-1)*100+0.5) + 1)
	}
}

// Calibration is the comparison of the chances shown with the outcomes.
type Calibration struct {
	Users int     // users shown a chance whose wait ended (admitted or not)
	Brier float64 // mean of (chance - outcome)²
	// Uncertain are the users told 10 % to 90 %, and BrierUncertain the
	// score over them alone.
	Uncertain      int
	BrierUncertain float64
	Bins           [10]CalibrationBin
	Unknown        int // shown a chance, still waiting at the end of an unfinished run
	Passed         int64
}

// CalibrationBin holds the users shown a chance in [i/10, (i+1)/10) (the
// last bin includes 1).
type CalibrationBin struct {
	Users, Admitted int
	Shown           float64 // sum of the chances shown
}

// Calibration compares the chances shown with the outcomes: a user not
// reached counts as not admitted when the sale finished (sold out or the
// queue empty), and is left out otherwise.
func (r *Report) Calibration() Calibration {
	c := r.sim.cal
	out := Calibration{Passed: c.passed.Load()}
	var sq, sqU float64
	for i := range c.shown {
		v := c.shown[i].Load()
		if v == 0 {
			continue
		}
		p := float64(v-1) / 100
		o := c.outcome[i].Load()
		if o == outcomeNone && !r.Finished {
			out.Unknown++
			continue
		}
		got := 0.0
		if o == outcomeAdmitted {
			got = 1
		}
		b := &out.Bins[min(9, int(p*10))]
		b.Users++
		b.Shown += p
		b.Admitted += int(got)
		sq += (p - got) * (p - got)
		out.Users++
		if p >= 0.1 && p <= 0.9 {
			sqU += (p - got) * (p - got)
			out.Uncertain++
		}
	}
	if out.Users > 0 {
		out.Brier = sq / float64(out.Users)
	}
	if out.Uncertain > 0 {
		out.BrierUncertain = sqU / float64(out.Uncertain)
	}
	return out
}

// Print writes the calibration table.
func (c Calibration) Print(w io.Writer) {
	fmt.Fprintf(w, "  chance       %d users shown a chance at their first poll (%d already served by then, %d still waiting in an unfinished run); Brier score %.4f (%.4f over the %d told 10-90%%)\n",
		c.Users, c.Passed, c.Unknown, c.Brier, c.BrierUncertain, c.Uncertain)
	for i, b := range c.Bins {
		if b.Users == 0 {
			continue
		}
		fmt.Fprintf(w, "    told %3d-%3d%%  %7d users, mean told %5.1f%%, admitted %5.1f%%\n",
			i*10, (i+1)*10, b.Users, 100*b.Shown/float64(b.Users), 100*float64(b.Admitted)/float64(b.Users))
	}
}
