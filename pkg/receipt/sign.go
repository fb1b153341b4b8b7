package receipt

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice/pkg/jsonobj"
	"github.com/boxoffice/boxoffice/pkg/pass"
)

// Join is one queued join to give a receipt.
type Join struct {
	EventID string
	Seq     int64
	// At is when the join was queued, by Redis's clock.
	At         time.Time
	DrawCommit string
	UserID     string
}

// Sign makes the receipts of joins, all of one event, under one signed
// root: a tree of their leaves (in the order given) whose root, with a
// fresh batch id, is signed once with s. It fills out[i] for joins[i].
func Sign(s *pass.Signer, joins []Join, out []Receipt) error {
	if len(joins) == 0 {
		return nil
	}
	if s == nil {
		return errors.New("sign receipts: no signing key")
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24)
	batch := base64.RawURLEncoding.EncodeToString(id[:])
	event := joins[0].EventID
	leaves := make([]Hash, len(joins))
	var buf []byte
	var latest time.Time
	for i := range joins {
		j := &joins[i]
		if j.EventID != event {
			return fmt.Errorf("sign receipts: joins of %q and %q in one batch", event, j.EventID)
		}
		if j.At.After(latest) {
			latest = j.At
		}
		out[i].Leaf = Leaf{EventID: event, Seq: j.Seq, JoinedMS: j.At.UnixMilli(), DrawCommit: j.DrawCommit,
			User: UserHash(batch, j.UserID)}
		buf = out[i].Leaf.Bytes(buf)
		leaves[i] = LeafHash(buf)
	}
	root, paths := tree(leaves)
	signed, err := s.SignTypedJSON(RootType, appendRootClaims(make([]byte, 0, 256), event, batch, len(joins), &root, s.Issuer(), latest))
	if err != nil {
		return fmt.Errorf("sign receipts: %w", err)
	}
	for i := range joins {
		out[i].Index, out[i].Path, out[i].Root = int64(i), paths[i], signed
	}
	return nil
}

// appendRootClaims appends the RootClaims of a batch as encoding/json
// writes them (TestSignedRootIsEncodingJSONs): iat is golang-jwt's
// NumericDate of iat, whole seconds.
func appendRootClaims(b []byte, event, batch string, size int, root *Hash, iss string, iat time.Time) []byte {
	o := jsonobj.New(b)
	o.Str("event_id", event)
	o.Str("batch", batch)
	o.Int("size", int64(size))
	o.Str("root", root.String())
	o.StrOmitEmpty("iss", iss)
	o.Int("iat", iat.Truncate(time.Second).Unix())
	return o.Bytes()
}

// Batcher signs the receipts of concurrent joins together: while one
// batch is being signed the next joins queue up and are signed in the
// following round, with one signature per event in the batch. Like the
// booking engine's pipeliner it waits for no timer: a lone join is
// signed at once, and under load batches grow by themselves
// (BenchmarkSign: the cost per join at each batch size).
type Batcher struct {
	signer *pass.Signer
	reqs   chan *request
	stop   chan struct{}
	wg     sync.WaitGroup

	mu     sync.RWMutex // held to read closed and send on reqs atomically
	closed bool

	signatures, receipts atomic.Int64
}

// Counts are the signatures the batcher made and the receipts they
// served (receipts / signatures is the mean batch).
func (b *Batcher) Counts() (signatures, receipts int64) {
	if b == nil {
		return 0, 0
	}
	return b.signatures.Load(), b.receipts.Load()
}

type request struct {
	join   Join
	out    Receipt
	err    error
	done   chan struct{}
	signed bool // by the batcher's goroutine only
}

// requests are reused: a request goes back once its caller has read the
// answer (never one whose caller gave up: the batcher may still hold it),
// and the batcher touches none after waking its caller (sign).
var requests = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

// free returns r, answered, to requests.
func free(r *request) {
	r.join, r.out, r.err, r.signed = Join{}, Receipt{}, nil, false
	requests.Put(r)
}

// maxBatch bounds the joins under one signature (and a path's length);
// maxYields the rounds a batch waits for more joins.
const (
	maxBatch  = 256
	maxYields = 8
)

// drain appends the requests waiting in reqs to batch, up to maxBatch.
func drain(reqs chan *request, batch []*request) []*request {
	for len(batch) < maxBatch {
		select {
		case r := <-reqs:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// NewBatcher starts a batcher signing with s; nil when s is nil (no
// receipts without keys).
func NewBatcher(s *pass.Signer) *Batcher {
	if s == nil {
		return nil
	}
	b := &Batcher{signer: s, reqs: make(chan *request, 4*maxBatch), stop: make(chan struct{})}
	b.wg.Go(b.loop)
	return b
}

// Issue returns j's receipt, signed with the joins issued at the same
// time. A nil Batcher returns a zero Receipt.
func (b *Batcher) Issue(ctx context.Context, j Join) (Receipt, error) {
	if b == nil {
		return Receipt{}, nil
	}
	r := requests.Get().(*request)
	r.join = j
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		b.sign([]*request{r})
		<-r.done
		return answer(r)
	}
	select {
	case b.reqs <- r:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		free(r)
		return Receipt{}, ctx.Err()
	}
	select {
	case <-r.done:
		return answer(r)
	case <-ctx.Done():
		return Receipt{}, ctx.Err()
	}
}

// SignNow signs joins, all of one event, under one root in the caller's
// goroutine, counted with the batcher's (Counts): for a caller that
// already holds joins answered together (the gateway's booking pipeline,
// booking.JoinsHook), which then need no hand-off to the batcher. It
// fills out[i] for joins[i]; a nil Batcher signs nothing.
func (b *Batcher) SignNow(joins []Join, out []Receipt) error {
	if b == nil || len(joins) == 0 {
		return nil
	}
	err := Sign(b.signer, joins, out)
	b.signatures.Add(1)
	b.receipts.Add(int64(len(joins)))
	return err
}

// answer is r's receipt and error, r then freed.
func answer(r *request) (Receipt, error) {
	out, err := r.out, r.err
	free(r)
	return out, err
}

func (b *Batcher) loop() {
	batch := make([]*request, 0, maxBatch)
	for {
		select {
		case <-b.stop:
			return
		case r := <-b.reqs:
			batch = append(batch[:0], r)
		}
		// Let the joins that are ready to run (answered by the same Redis
		// round trip) reach Issue first, for as long as yielding brings
		// more: a Gosched returns at once when none is ready, so a lone
		// join still waits for no timer.
		for range maxYields {
			n := len(batch)
			runtime.Gosched()
			batch = drain(b.reqs, batch)
			if len(batch) == n || len(batch) == maxBatch {
				break
			}
		}
		b.sign(batch)
	}
}

// sign signs a batch, one tree per event (in the order of each event's
// first join), then wakes its callers: a woken caller's request may be
// reused at once, so none is looked at after the first is woken.
func (b *Batcher) sign(batch []*request) {
	joins := make([]Join, 0, len(batch))
	out := make([]Receipt, len(batch))
	group := make([]*request, 0, len(batch))
	for done := 0; done < len(batch); {
		event := ""
		joins, group = joins[:0], group[:0]
		for _, r := range batch {
			if r.signed {
				continue
			}
			if event == "" {
				event = r.join.EventID
			}
			if r.join.EventID == event {
				joins, group = append(joins, r.join), append(group, r)
			}
		}
		err := Sign(b.signer, joins, out[:len(joins)])
		b.signatures.Add(1)
		b.receipts.Add(int64(len(joins)))
		for i, r := range group {
			r.out, r.err = out[i], err
			done++
			r.signed = true
		}
	}
	for _, r := range batch {
		r.done <- struct{}{}
	}
}

// Close stops the batcher; joins issued afterwards are signed alone.
func (b *Batcher) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	b.wg.Wait()
	for {
		select {
		case r := <-b.reqs:
			b.sign([]*request{r})
		default:
			return
		}
	}
}
