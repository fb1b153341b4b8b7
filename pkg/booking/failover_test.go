package booking

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// FailoverEnv must be "1" for TestClusterFailoverMidSale: it starts six
// redis-server processes of its own.
const FailoverEnv = "BOXOFFICE_REDIS_FAILOVER"

// startReplicatedCluster starts 3 masters with one replica each
// (redistest.StartReplicated), when FailoverEnv is "1".
func startReplicatedCluster(t *testing.T) (*redis.ClusterClient, *redistest.Replicated) {
	t.Helper()
	if os.Getenv(FailoverEnv) != "1" {
		t.Skipf("set %s=1 to start a 6-node Redis Cluster and fail a master over", FailoverEnv)
	}
	r := redistest.StartReplicated(t, 3)
	return r.Client, r
}

// transient reports whether err is not one of the scripts' answers (a
// connection reset, a redirect storm, a timeout while the slot moves).
func transient(err error) bool {
	if err == nil {
		return false
	}
	for _, s := range codeErrors {
		if errors.Is(err, s) {
			return false
		}
	}
	return true
}

// A sale on a Redis Cluster of three masters with a replica each; mid-sale
// the replica of the event's master takes over (CLUSTER FAILOVER, the
// operator's planned failover). The sale runs to its end: every seat sold
// exactly once, to distinct users, the invariants hold, and promotion keeps
// admitting after the failover (the queue never stalls). Calls that fail
// with a non-script error during the switch are retried, as the services'
// callers (HTTP clients, message redelivery) would.
//
//	BOXOFFICE_REDIS_FAILOVER=1 go test -count=1 -run TestClusterFailoverMidSale -v ./pkg/booking/
func TestClusterFailoverMidSale(t *testing.T) {
	rdb, cluster := startReplicatedCluster(t)
	f := newFixtureOn(t, rdb)
	const event, seats, users = "failover-evt", 40, 70
	f.event(EventConfig{ID: event, Rows: 4, SeatsPerRow: 10, Capacity: 5, Hold: time.Hour})
	var transients sync.Map
	call := func(name string, fn func() error) error {
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			if err = fn(); !transient(err) {
				return err
			}
			transients.Store(name+": "+err.Error(), true)
			time.Sleep(50 * time.Millisecond)
		}
		return err
	}
	var admittedAtJoin []string
	for i := range users {
		u := fmt.Sprintf("u%03d", i)
		var r JoinResult
		if err := call("enqueue", func() error { var err error; r, err = f.s.Enqueue(f.ctx, event, u); return err }); err != nil {
			t.Fatalf("enqueue %s: %v", u, err)
		}
		if r.State == StateActive {
			admittedAtJoin = append(admittedAtJoin, u)
		}
	}

	// buyer takes an admitted user through a free seat and payment. A
	// retried call may meet its own earlier success: the final state decides.
	var mu sync.Mutex
	soldTo := map[string]string{} // seat -> user
	buy := func(u string) error {
		for r := range 4 {
			for c := range 10 {
				seat := fmt.Sprintf("%c%d", 'A'+r, c+1)
				err := call("lock", func() error { _, err := f.s.LockSeat(f.ctx, event, u, seat); return err })
				if errors.Is(err, ErrSeatUnavailable) {
					continue
				}
				if err != nil && !errors.Is(err, ErrInvalidState) {
					return fmt.Errorf("lock %s: %w", seat, err)
				}
				pid := "pay-" + u
				if err := call("initiate", func() error { _, err := f.s.InitiatePayment(f.ctx, event, u, pid); return err }); err != nil && !errors.Is(err, ErrInvalidState) {
					return fmt.Errorf("initiate: %w", err)
				}
				err = call("success", func() error { _, err := f.s.PaymentSuccess(f.ctx, event, u, pid); return err })
				if err != nil && !errors.Is(err, ErrAlreadyCompleted) {
					return fmt.Errorf("success: %w", err)
				}
				mu.Lock()
				soldTo[seat] = u
				mu.Unlock()
				return nil
			}
		}
		return errors.New("no seat left")
	}

	failedOver := make(chan string, 1)
	go func() {
		// once a third of the seats are sold, fail the event's master over
		for {
			mu.Lock()
			n := len(soldTo)
			mu.Unlock()
			if n >= seats/3 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		key := keysFor(f.s.prefix, event)[kConfig]
		master, addr, err := cluster.MasterOf(f.ctx, key)
		if err != nil {
			t.Error(err)
			return
		}
		if addr == "" {
			t.Errorf("no replica of %s", master)
			return
		}
		replica := redis.NewClient(&redis.Options{Addr: addr})
		defer replica.Close()
		if err := replica.Do(f.ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
			t.Errorf("CLUSTER FAILOVER on %s: %v", addr, err)
			return
		}
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
			if s, _ := replica.Do(f.ctx, "ROLE").Slice(); len(s) > 0 && s[0] == "master" {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Errorf("%s did not become master", addr)
				return
			}
		}
		failedOver <- master + " -> " + addr
	}()

	var promotedAfter int
	var switched string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case switched = <-failedOver:
			t.Logf("failed over %s", switched)
		default:
		}
		mu.Lock()
		n := len(soldTo)
		mu.Unlock()
		if n == seats {
			break
		}
		if n >= 2*seats/3 && switched == "" {
			// the last third is sold after the failover, whatever the timing
			select {
			case switched = <-failedOver:
				t.Logf("failed over %s", switched)
			case <-time.After(60 * time.Second):
				t.Fatal("the failover never completed")
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sale stalled: %d of %d seats sold (failover %q)", n, seats, switched)
		}
		var p PromoteResult
		if err := call("promote", func() error { var err error; p, err = f.s.Promote(f.ctx, event, 0); return err }); err != nil && !errors.Is(err, ErrSoldOut) {
			t.Fatalf("promote: %v", err)
		}
		for _, u := range admittedAtJoin {
			p.Promoted = append(p.Promoted, Admission{UserID: u})
		}
		admittedAtJoin = nil
		var wg sync.WaitGroup
		errs := make(chan error, len(p.Promoted))
		for _, a := range p.Promoted {
			wg.Go(func() {
				if err := buy(a.UserID); err != nil {
					errs <- fmt.Errorf("%s: %w", a.UserID, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if switched != "" {
			promotedAfter += len(p.Promoted)
		}
		if len(p.Promoted) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if switched == "" {
		select {
		case switched = <-failedOver:
		case <-time.After(30 * time.Second):
			t.Fatal("the failover never completed")
		}
	}
	if promotedAfter == 0 {
		t.Errorf("no user admitted after the failover (%s); it happened too late to prove anything", switched)
	}
	users2 := map[string]string{}
	for seat, u := range soldTo {
		if other, ok := users2[u]; ok {
			t.Errorf("%s bought %s and %s", u, other, seat)
		}
		users2[u] = seat
	}
	for seat, st := range f.seats(event) {
		if st != SeatSold {
			t.Errorf("seat %s is %v at the end", seat, st)
		}
	}
	f.checkInvariants(event)
	var errs []string
	transients.Range(func(k, _ any) bool { errs = append(errs, k.(string)); return true })
	t.Logf("%d seats sold, %d users admitted after the failover %s; transient errors retried: %v", len(soldTo), promotedAfter, switched, errs)
}
