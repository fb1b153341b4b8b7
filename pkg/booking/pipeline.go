package booking

import (
	"context"
	"fmt"
	"sync"
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
// pipeline only shares the connection.
type pipeliner struct {
	rdb   redis.UniversalClient
	calls chan *pcall
	wg    sync.WaitGroup
	once  sync.Once
	stop  chan struct{}

	mu     sync.RWMutex // held to read closed and send on calls atomically
	closed bool
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

// argv is the call's FCALL command line: the keys are boxed once per
// event (keySet.args), only the script's own arguments per call.
func (c *pcall) argv() []any {
	a := make([]any, 0, 3+len(c.sc.keys)+len(c.extra)+len(c.args))
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
	for {
		select {
		case <-p.stop:
			return
		case c := <-p.calls:
			batch = append(batch[:0], c)
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
		p.flush(batch, cmds[:0])
	}
}

func (p *pipeliner) flush(batch []*pcall, cmds []*redis.Cmd) {
	ctx, cancel := context.WithTimeout(context.Background(), pipelineTimeout)
	defer cancel()
	if len(batch) == 1 { // no pipeline overhead for a lone call
		c := batch[0]
		c.res, c.err = p.rdb.Do(c.ctx, c.argv()...).Result()
	} else {
		units := groupJoins(batch)
		pipe := p.rdb.Pipeline()
		for _, u := range units {
			if len(u) == 1 {
				cmds = append(cmds, pipe.Do(ctx, u[0].argv()...))
			} else {
				cmds = append(cmds, pipe.Do(ctx, joinBatchArgv(u)...))
			}
		}
		_, _ = pipe.Exec(ctx) // errors are per command
		for i, u := range units {
			if len(u) == 1 {
				u[0].res, u[0].err = cmds[i].Result()
			} else {
				splitJoins(u, cmds[i])
			}
		}
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
}

// groupJoins splits a pipeline's calls into the commands it sends: the
// joins (scriptEnqueue) of one event with the same limits become one call
// of enqueue_batch (joinBatchArgv), placed where the first of them was;
// every other call stays one command. The joins keep their order among
// themselves; a join may run after a call that arrived after it, which
// the callers cannot tell apart from arriving in that order (both were
// in flight at once).
func groupJoins(batch []*pcall) [][]*pcall {
	units := make([][]*pcall, 0, len(batch))
	var open []int // indexes of units that are joins
next:
	for _, c := range batch {
		if c.sc == scriptEnqueue && len(c.args) == 3+2*len(c.extra) {
			for _, u := range open {
				if sameJoinBatch(units[u][0], c) {
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

// sameJoinBatch reports whether two joins can go in one enqueue_batch:
// the same event and the same limit slots (count, intervals, bursts).
func sameJoinBatch(a, b *pcall) bool {
	if a.keys != b.keys && a.keys.keys[0] != b.keys.keys[0] {
		return false
	}
	if len(a.extra) != len(b.extra) {
		return false
	}
	for i := 3; i < len(a.args); i++ {
		if a.args[i] != b.args[i] {
			return false
		}
	}
	return true
}

// joinBatchArgv is the FCALL of enqueue_batch.lua for joins, each of
// whose args is enqueue's (user, now, own, then per limit its interval
// and burst; its limit keys in extra): the limit keys are sent once each.
func joinBatchArgv(joins []*pcall) []any {
	first, sc := joins[0], scriptEnqueueBatch
	m := len(first.extra)
	var lkeys []string
	var num map[string]int
	if m > 0 {
		num = make(map[string]int, len(joins)+m)
		for _, c := range joins {
			for _, k := range c.extra {
				if _, ok := num[k]; !ok {
					lkeys = append(lkeys, k)
					num[k] = len(lkeys)
				}
			}
		}
	}
	a := make([]any, 0, 5+len(sc.keys)+len(lkeys)+2*m+len(joins)*(3+m))
	a = append(a, "fcall", sc.fn, len(sc.keys)+len(lkeys))
	for _, i := range sc.keys {
		a = append(a, first.keys.args[i])
	}
	for _, k := range lkeys {
		a = append(a, k)
	}
	a = append(a, len(joins), m)
	a = append(a, first.args[3:]...)
	for _, c := range joins {
		a = append(a, c.args[0], c.args[1], c.args[2])
		for _, k := range c.extra {
			a = append(a, num[k])
		}
	}
	return a
}

// splitJoins gives each join its own reply out of enqueue_batch's list.
func splitJoins(joins []*pcall, cmd *redis.Cmd) {
	res, err := cmd.Result()
	list, ok := res.([]any)
	if err == nil && (!ok || len(list) != len(joins)) {
		err = fmt.Errorf("enqueue_batch: %d replies for %d joins", len(list), len(joins))
	}
	for i, c := range joins {
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
