package booking

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/redisfn"
)

// pipeliner batches script calls of concurrent callers into Redis
// pipelines (auto-pipelining): while one batch is on the wire the next
// calls queue up and go out together in the following round trip. Under
// load this turns N requests' 2N syscalls (and Redis's N reads and writes)
// into a handful, which is where an unpipelined client spends most of its
// CPU; an idle caller pays nothing extra because a lone call is flushed at
// once, without a timer. Each script call is still atomic on its own; a
// pipeline only shares the connection. Calls of a batched script (joins,
// position reads) of one event in one pipeline go further: they become
// one call of its batch variant (groupCalls), which answers each as if it
// had been called alone, in order (docs/booking-engine.md "Joins and
// reads in batches").
type pipeliner struct {
	rdb   redis.UniversalClient
	calls chan *pcall
	wg    sync.WaitGroup
	once  sync.Once
	stop  chan struct{}

	mu     sync.RWMutex // held to read closed and send on calls atomically
	closed bool

	joins atomic.Pointer[JoinsHook] // Store.OnJoins
}

// JoinsHook is given the joins of eventID one round trip answered
// together, users[i]'s answer in joins[i] (only joins that succeeded),
// in the pipeliner before their callers are woken: work it does for
// them all at once (the gateway signs their receipts under one root)
// costs no further hand-off per join. What it sets in a join's Attached
// is in the JoinResult its Enqueue (or EnqueueCode) returns. It must not
// block: the next round trip waits for it.
type JoinsHook func(eventID string, users []string, joins []*JoinResult)

// OnJoins sets the hook run on every round trip's joins (nil: none).
// Joins not sent through the pipeliner (WithAutoPipeline(0), or after
// Close) do not reach it.
func (s *Store) OnJoins(h JoinsHook) {
	if s.pipe == nil {
		return
	}
	if h == nil {
		s.pipe.joins.Store(nil)
		return
	}
	s.pipe.joins.Store(&h)
}

// joinAnswer is a join's decoded answer, the pcall's result when a
// JoinsHook saw it (runJoin returns it as is).
type joinAnswer struct {
	res JoinResult
	err error
}

type pcall struct {
	ctx   context.Context
	sc    *script
	keys  *keySet
	extra []string // keys after the event's (abuse limits)
	args  []any
	done  chan struct{}
	res   any
	err   error
}

// argv appends the call's FCALL command line to a: the keys are boxed
// once per event (keySet.args), only the script's own arguments per call.
func (c *pcall) argv(a []any) []any {
	a = append(a, "fcall", c.sc.fn, len(c.sc.keys)+len(c.extra))
	for _, i := range c.sc.keys {
		a = append(a, c.keys.args[i])
	}
	for _, k := range c.extra {
		a = append(a, k)
	}
	return append(a, c.args...)
}

// run sends the call again on its own, after the server did not have the
// function (callScript loads the library when it is still missing).
func (c *pcall) run(rdb redis.UniversalClient) {
	c.res, c.err = callScript(c.ctx, rdb, c.sc, c.keys, c.extra, c.args...)
	c.done <- struct{}{}
}

const (
	pipelineMaxBatch = 256
	// pipelineTimeout bounds one round trip; a caller's own context still
	// ends its wait earlier.
	pipelineTimeout = 10 * time.Second
)

// newPipeliner starts `flushers` goroutines, each sending one batch at a
// time, so up to `flushers` pipelines are in flight at once.
func newPipeliner(rdb redis.UniversalClient, flushers int) *pipeliner {
	p := &pipeliner{rdb: rdb, calls: make(chan *pcall, 4*pipelineMaxBatch), stop: make(chan struct{})}
	for range flushers {
		p.wg.Go(p.loop)
	}
	return p
}

var pcallPool = sync.Pool{New: func() any { return &pcall{done: make(chan struct{}, 1)} }}

// do runs one script through the next pipeline and waits for its reply.
func (p *pipeliner) do(ctx context.Context, sc *script, keys *keySet, extra []string, args []any) (any, error) {
	c := pcallPool.Get().(*pcall)
	c.ctx, c.sc, c.keys, c.extra, c.args = ctx, sc, keys, extra, args
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		pcallPool.Put(c)
		return callScript(ctx, p.rdb, sc, keys, extra, args...)
	}
	select {
	case p.calls <- c:
		p.mu.RUnlock()
	case <-ctx.Done():
		p.mu.RUnlock()
		pcallPool.Put(c)
		return nil, ctx.Err()
	}
	select {
	case <-c.done:
		res, err := c.res, c.err
		*c = pcall{done: c.done}
		pcallPool.Put(c)
		return res, err
	case <-ctx.Done():
		// the flusher still owns c and will signal done into its buffer;
		// c is dropped, not returned to the pool
		return nil, ctx.Err()
	}
}

func (p *pipeliner) loop() {
	batch := make([]*pcall, 0, pipelineMaxBatch)
	cmds := make([]*redis.Cmd, 0, pipelineMaxBatch)
	var args []any // the batch's command lines, reused (flush)
	for {
		select {
		case <-p.stop:
			return
		case c := <-p.calls:
			batch = append(batch[:0], c)
		}
		if len(p.calls) == 0 {
			// Alone so far: let the goroutines that are ready to run
			// (requests read from their connections) reach their call
			// first, so that they share this round trip instead of
			// starting the next one. Returns at once when none is ready,
			// so an idle caller still waits for no timer.
			runtime.Gosched()
		}
	drain:
		for len(batch) < pipelineMaxBatch {
			select {
			case c := <-p.calls:
				batch = append(batch, c)
			default:
				break drain
			}
		}
		args = p.flush(batch, cmds[:0], args)
	}
}

// flush sends batch and answers its callers. Its commands' lines are
// appended to args, a buffer kept from one batch to the next (returned,
// emptied; nothing holds a line once the replies are read), where each
// line was a new slice of its own.
func (p *pipeliner) flush(batch []*pcall, cmds []*redis.Cmd, args []any) []any {
	ctx, cancel := context.WithTimeout(context.Background(), pipelineTimeout)
	defer cancel()
	args = args[:0]
	// no user ids kept alive in between
	defer func() { clear(args) }()
	if len(batch) == 1 { // no pipeline overhead for a lone call
		c := batch[0]
		args = c.argv(args)
		c.res, c.err = p.rdb.Do(c.ctx, args...).Result()
	} else {
		units := groupCalls(batch)
		pipe := p.rdb.Pipeline()
		for _, u := range units {
			start := len(args)
			if len(u) == 1 {
				args = u[0].argv(args)
			} else {
				args = batchArgv(args, u)
			}
			cmds = append(cmds, pipe.Do(ctx, args[start:len(args):len(args)]...))
		}
		_, _ = pipe.Exec(ctx) // errors are per command
		for i, u := range units {
			if len(u) == 1 {
				u[0].res, u[0].err = cmds[i].Result()
			} else {
				splitBatch(u, cmds[i])
			}
		}
	}
	if h := p.joins.Load(); h != nil {
		answerJoins(*h, batch)
	}
	reloaded := false
	for _, c := range batch {
		if redisfn.IsNoFunction(c.err) {
			// the server lost its functions (restart, new node): load
			// the library again, once for the batch, and send the
			// call again; later batches find it
			if !reloaded {
				reloaded = true
				_ = redisfn.Reload(ctx, p.rdb) // a failure: c.run loads again
			}
			c.run(p.rdb)
			continue
		}
		c.done <- struct{}{}
	}
	return args[:0]
}

// answerJoins decodes the answers of the joins among calls (their
// results become *joinAnswer) and gives each event's successful ones to
// h, in the order they were sent; not those flush sends again.
func answerJoins(h JoinsHook, calls []*pcall) {
	var users []string
	var joins []*JoinResult
	var events []string
	var answers []joinAnswer // one allocation for the round trip's joins
	for _, c := range calls {
		if c.sc != scriptEnqueue || redisfn.IsNoFunction(c.err) { // sent again alone
			continue
		}
		if answers == nil {
			answers = make([]joinAnswer, 0, len(calls))
		}
		user, _ := c.args[0].(string)
		answers = append(answers, joinAnswer{})
		a := &answers[len(answers)-1]
		r, err := decodeReply(c.res, c.err)
		a.res, a.err = joinResult(r, err, user)
		c.res, c.err = a, nil
		if a.err == nil && !slices.Contains(events, c.keys.event) {
			events = append(events, c.keys.event)
		}
	}
	for _, event := range events {
		users, joins = users[:0], joins[:0]
		for _, c := range calls {
			if a, ok := c.res.(*joinAnswer); ok && a.err == nil && c.keys.event == event {
				users = append(users, c.args[0].(string))
				joins = append(joins, &a.res)
			}
		}
		h(event, users, joins)
	}
}

// groupCalls splits a pipeline's calls into the commands it sends: the
// calls of a batched script (script.batchedAs: joins, position reads) for
// one event with the same limits become one call of its batch variant
// (batchArgv), placed where the first of them was; every other call
// stays one command. The grouped calls keep their order among
// themselves; one may run after a call that arrived after it, which the
// callers cannot tell apart from arriving in that order (both were in
// flight at once).
func groupCalls(batch []*pcall) [][]*pcall {
	units := make([][]*pcall, 0, len(batch))
	var open []int // indexes of units of a batched script
next:
	for _, c := range batch {
		if c.sc.batch != nil && len(c.args) == c.sc.head+2*len(c.extra) {
			for _, u := range open {
				if sameBatch(units[u][0], c) {
					units[u] = append(units[u], c)
					continue next
				}
			}
			open = append(open, len(units))
		}
		units = append(units, []*pcall{c})
	}
	return units
}

// sameBatch reports whether two calls can go in one batch call: the same
// script, the same event and the same limit slots (count, intervals,
// bursts).
func sameBatch(a, b *pcall) bool {
	if a.sc != b.sc || len(a.extra) != len(b.extra) {
		return false
	}
	if a.keys != b.keys && a.keys.keys[0] != b.keys.keys[0] {
		return false
	}
	for i := a.sc.head; i < len(a.args); i++ {
		if a.args[i] != b.args[i] {
			return false
		}
	}
	return true
}

// batchArgv appends to a the FCALL of the batch variant of calls' script
// (enqueue_batch.lua, get_position_batch.lua): each call's args are the
// script's own (its head values, then per limit its interval and burst;
// its limit keys in extra), and the limit keys are sent once each.
func batchArgv(a []any, calls []*pcall) []any {
	first := calls[0]
	sc, head, m := first.sc.batch, first.sc.head, len(first.extra)
	var lkeys []string
	var num map[string]int
	if m > 0 {
		num = make(map[string]int, len(calls)+m)
		for _, c := range calls {
			for _, k := range c.extra {
				if _, ok := num[k]; !ok {
					lkeys = append(lkeys, k)
					num[k] = len(lkeys)
				}
			}
		}
	}
	a = slices.Grow(a, 5+len(sc.keys)+len(lkeys)+2*m+len(calls)*(head+m))
	a = append(a, "fcall", sc.fn, len(sc.keys)+len(lkeys))
	for _, i := range sc.keys {
		a = append(a, first.keys.args[i])
	}
	for _, k := range lkeys {
		a = append(a, k)
	}
	a = append(a, len(calls), m)
	a = append(a, first.args[head:]...)
	for _, c := range calls {
		a = append(a, c.args[:head]...)
		for _, k := range c.extra {
			a = append(a, num[k])
		}
	}
	return a
}

// splitBatch gives each call its own reply out of the batch call's list.
func splitBatch(calls []*pcall, cmd *redis.Cmd) {
	res, err := cmd.Result()
	list, ok := res.([]any)
	if err == nil && (!ok || len(list) != len(calls)) {
		err = fmt.Errorf("%s: %d replies for %d calls", calls[0].sc.batch.fn, len(list), len(calls))
	}
	for i, c := range calls {
		if err != nil {
			c.res, c.err = nil, err
		} else {
			c.res, c.err = list[i], nil
		}
	}
}

// close stops the flushers; calls still queued, and calls made
// afterwards, run unpipelined.
func (p *pipeliner) close() {
	// no call is queued after this: do sees closed and runs it alone
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
	for {
		select {
		case c := <-p.calls:
			c.run(p.rdb)
		default:
			return
		}
	}
}
