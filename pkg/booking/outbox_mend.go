package booking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Mending the outbox entries an earlier version of the scripts wrote with
// the join sequence in Lua's exponent form: expiries and cancellations on
// an event rebuilt from the ledger (sequences near 1.8e15), whose field
// and value said '1.795811857885e+15' (%.14g: the digits past 14 lost)
// where the sequence belongs. lua/mend_outbox.lua rewrites them.
var scriptMendOutbox = newScript("mend_outbox")

// mendOutbox rewrites the unreadable entries of bad (KindUnreadable) that
// it can under their exact sequence and returns them parsed; the others
// are returned as given. An expiry ('x') or cancellation ('c') whose
// sequence is in exponent form is mended when its user's record still
// names that hold: the user's state is the entry's outcome (expired;
// cancelled, or abandoned for a cancellation from 'abandoned') and the
// user's sequence prints as the entry's in %.14g. A user who joined again
// since has a new state and sequence: their old entry stays unreadable.
func (s *Store) mendOutbox(ctx context.Context, eventID string, bad []OutboxEntry) ([]OutboxEntry, error) {
	type fix struct {
		i          int // in bad
		kind, user string
		parts      []string
		state      string // the user's state the entry needs
	}
	var fixes []fix
	for i, e := range bad {
		kind, rest, _ := strings.Cut(e.Field, ":")
		short, user, ok := strings.Cut(rest, ":")
		parts := strings.Split(e.Value, "|")
		if !ok || (kind != "x" && kind != "c") || len(parts) < 4 || parts[0] != short {
			continue
		}
		if _, err := strconv.ParseFloat(short, 64); err != nil || !strings.Contains(short, "e+") {
			continue
		}
		state := StateExpired
		if kind == "c" {
			state = StateCancelled
			if parts[1] == FromAbandoned {
				state = StateAbandoned
			}
		}
		fixes = append(fixes, fix{i: i, kind: kind, user: user, parts: parts, state: string(state)})
	}
	if len(fixes) == 0 {
		return bad, nil
	}
	k := s.eventKeys(eventID)
	pipe := s.rdb.Pipeline()
	states := make([]*redis.StringCmd, len(fixes))
	seqs := make([]*redis.StringCmd, len(fixes))
	for j, f := range fixes {
		states[j] = pipe.HGet(ctx, k[kState], f.user)
		seqs[j] = pipe.HGet(ctx, k[kUseq], f.user)
	}
	_, _ = pipe.Exec(ctx)
	for _, c := range append(states, seqs...) {
		// (a missing field is redis.Nil: Val() is "", no match)
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("mend outbox: %w", err)
		}
	}
	var args []any
	var tried []int // fixes with args
	for j, f := range fixes {
		seq, err := strconv.ParseInt(seqs[j].Val(), 10, 64)
		if err != nil || states[j].Val() != f.state || strconv.FormatFloat(float64(seq), 'g', 14, 64) != f.parts[0] {
			continue
		}
		e := bad[f.i]
		parts := append([]string{seqs[j].Val()}, f.parts[1:]...)
		args = append(args, e.Field, e.Value, f.user, f.state, seqs[j].Val(),
			outboxField(f.kind[0], seq, f.user), strings.Join(parts, "|"))
		tried = append(tried, j)
	}
	if len(args) == 0 {
		return bad, nil
	}
	r, err := s.run(ctx, scriptMendOutbox, eventID, args...)
	if err != nil {
		return nil, fmt.Errorf("mend outbox: %w", err)
	}
	var done reply
	r.scan(&done)
	out := append([]OutboxEntry(nil), bad...)
	for n, j := range tried {
		if done.int(n) != 1 {
			continue
		}
		field, value := args[7*n+5].(string), args[7*n+6].(string)
		if e, ok := parseOutbox(field, value); ok {
			out[fixes[j].i] = e
		}
	}
	return out, nil
}
