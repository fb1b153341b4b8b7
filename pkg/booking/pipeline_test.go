package booking

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestPipelineNoScript: calls of a script Redis has never seen (a restart
// or a new node lost the script cache) fail with NOSCRIPT inside a pipeline
// and alone, and the pipeliner loads the script and answers every caller
// with its own reply. The script text is new to this run, so nothing
// flushes the shared server's cache.
func TestPipelineNoScript(t *testing.T) {
	rdb := redistest.Client(t)
	ks := &keySet{keys: []string{redistest.Prefix(t) + ":k"}}
	ks.args = []any{ks.keys[0]}
	nonce := rand.Text()
	for _, flushers := range []int{1, 4} {
		p := newPipeliner(rdb, flushers)
		sc := redis.NewScript(fmt.Sprintf("return ARGV[1] .. KEYS[1] .. '%s-%d'", nonce, flushers))
		// a lone call first, then concurrent ones that batch
		if v, err := p.do(context.Background(), sc, ks, nil, []any{"lone"}); err != nil || v != "lone"+ks.keys[0]+fmt.Sprintf("%s-%d", nonce, flushers) {
			t.Fatalf("lone call: %v %v", v, err)
		}
		sc2 := redis.NewScript(fmt.Sprintf("return ARGV[1] .. '%s-%d-batch'", nonce, flushers))
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				want := fmt.Sprintf("%d%s-%d-batch", i, nonce, flushers)
				if v, err := p.do(context.Background(), sc2, ks, nil, []any{i}); err != nil || v != want {
					t.Errorf("call %d: %v %v, want %s", i, v, err, want)
				}
			})
		}
		wg.Wait()
		p.close()
		// after close, calls still work, one round trip each
		if v, err := p.do(context.Background(), sc2, ks, nil, []any{"after"}); err != nil || v != fmt.Sprintf("after%s-%d-batch", nonce, flushers) {
			t.Fatalf("after close: %v %v", v, err)
		}
	}
}
