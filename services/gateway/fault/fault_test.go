package fault

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
	"github.com/boxoffice/boxoffice/pkg/testseed"
)

func TestMain(m *testing.M) { stacktest.Main(m) }

// config is the suite's size: small by default (make test), large with
// FAULT_SOAK=1.
type config struct {
	soak        bool
	seed        uint64
	users       int           // per round
	rows, per   int           // seats of each round's event
	room        int           // capacity of the booking room
	rounds      int           // soak: random faults
	brokerDown  time.Duration // RabbitMQ and PostgreSQL outage
	kafkaDown   time.Duration // Kafka outage
	slowFor     time.Duration // Redis 300 ms slow, half-open, bandwidth
	finalWithin time.Duration // every user final within this after the fault ends
}

func loadConfig(t *testing.T) config {
	c := config{users: 60, rows: 2, per: 10, room: 8, brokerDown: 10 * time.Second, kafkaDown: 30 * time.Second,
		slowFor: 10 * time.Second, finalWithin: 60 * time.Second, seed: testseed.Seed(t)}
	if os.Getenv("FAULT_SOAK") == "1" {
		c.soak, c.users, c.rows, c.per, c.room, c.rounds = true, 300, 6, 10, 20, 20
		c.kafkaDown = 60 * time.Second
	}
	num := func(k string, p *int) {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			*p = v
		}
	}
	num("FAULT_USERS", &c.users)
	num("FAULT_ROUNDS", &c.rounds)
	kd := int(c.kafkaDown / time.Second)
	num("FAULT_KAFKA_OUTAGE_S", &kd)
	c.kafkaDown = time.Duration(kd) * time.Second
	t.Logf("fault suite: soak=%v seed=%d users/round=%d seats=%d room=%d (FAULT_SOAK, BOXOFFICE_TEST_SEED, FAULT_USERS, FAULT_ROUNDS, FAULT_KAFKA_OUTAGE_S)",
		c.soak, c.seed, c.users, c.rows*c.per, c.room)
	return c
}

// allServices run in the suite, consumers first.
var allServices = []string{stacktest.SlotReleasedConsumer, stacktest.TimeoutConsumer, stacktest.PaymentWebhook,
	stacktest.PaymentSandbox, stacktest.Notifier, stacktest.Popularity, stacktest.Gateway}

// suite is the stack all rounds share.
type suite struct {
	cfg config
	s   *stacktest.Stack
	f   *stacktest.Faults
	tap *stacktest.Tap
	// gateways the users spread over (a second instance in the twins round)
	gateways []string
	// poison messages expected in the DLQs right now
	poison map[string]int
	rows   []row
	// knownHits are the known issues seen (fault: check)
	knownHits []string
}

// fault is one fault of the matrix. inject runs during the sale, starting
// shortly after the first joins, and returns when the fault is over.
type fault struct {
	name string
	// exactlyOnce: no process dies and no connection breaks mid-message, so
	// every admission must produce exactly one timeout and one your_turn.
	exactlyOnce bool
	setup       func(t *testing.T, su *suite) // before the sale (optional)
	// known: checks (by key) that fail for a reported, not yet fixed
	// reason; they are logged as KNOWN ISSUE instead of failing the test,
	// unless FAULT_STRICT=1.
	known  map[string]string
	inject func(t *testing.T, su *suite)
	after  func(t *testing.T, su *suite, ev string, us []*stacktest.Buyer) // after the checks (optional)
	// hold and grace of the round's event; zero: 3 s and 1 s
	hold, grace time.Duration
}

// row is what the suite measured for one fault (docs/testing.md).
type row struct {
	fault                  string
	users, admitted, sold  int
	faultFor, final        time.Duration // fault duration; fault end -> every user final
	retried                int64         // client requests repeated (5xx, transport error)
	dupCompleted           int           // booking_completed copies beyond one per fact
	dupTurns, dupTimeouts  int           // RabbitMQ copies beyond one per fact
	maxCopies              int           // most copies of one your_turn or timeout
	ledgerLag, rabbitDrain time.Duration
}

func killRestart(name string) fault {
	return fault{name: "kill -9 " + name, inject: func(t *testing.T, su *suite) {
		su.s.Kill(t, name)
		time.Sleep(time.Second)
		su.s.Restart(t, name)
	}}
}

func outage(tg stacktest.Target, d time.Duration, exactlyOnce bool) fault {
	return fault{name: fmt.Sprintf("%s unreachable %v", tg, d), exactlyOnce: exactlyOnce, inject: func(t *testing.T, su *suite) {
		su.f.Outage(t, tg, d)
	}}
}

// kafkaOutage cuts Kafka off. Once fixed known issues (docs/testing.md,
// fault matrix): no healthy message is dead-lettered (a handler
// whose only failure is the Kafka write acks and leaves Kafka to the
// outbox), every booking_expired reaches Kafka through the outbox without
// a DLQ replay, and each your_turn/timeout is published once.
func kafkaOutage(d time.Duration) fault {
	return outage(stacktest.TargetKafka, d, true)
}

func (su *suite) faults() []fault {
	c := su.cfg
	fs := []fault{{name: "none (baseline)", exactlyOnce: true, inject: func(*testing.T, *suite) {}}}
	for _, n := range []string{stacktest.Gateway, stacktest.SlotReleasedConsumer, stacktest.TimeoutConsumer,
		stacktest.PaymentWebhook, stacktest.Notifier, stacktest.Popularity} {
		fs = append(fs, killRestart(n))
	}
	fs = append(fs,
		twins(),
		outage(stacktest.TargetRabbitMQ, c.brokerDown, false),
		kafkaOutage(c.kafkaDown),
		fault{name: "redis connections reset", inject: func(t *testing.T, su *suite) {
			su.f.Reset(t, stacktest.TargetRedis, time.Second)
		}},
		fault{name: "redis 300ms slow " + c.slowFor.String(), inject: func(t *testing.T, su *suite) {
			defer su.f.Latency(t, stacktest.TargetRedis, 300*time.Millisecond)()
			time.Sleep(c.slowFor)
		}},
		fault{name: "redis half-open 5s", inject: func(t *testing.T, su *suite) {
			defer su.f.HalfOpen(t, stacktest.TargetRedis)()
			time.Sleep(5 * time.Second)
		}},
		fault{name: "rabbitmq 2 KB/s " + c.slowFor.String(), inject: func(t *testing.T, su *suite) {
			defer su.f.Bandwidth(t, stacktest.TargetRabbitMQ, 2)()
			time.Sleep(c.slowFor)
		}},
		outage(stacktest.TargetPostgres, c.brokerDown, false),
		poisonFault(),
		skewed(30*time.Second, -30*time.Second),
		skewed(-30*time.Second, 30*time.Second),
		providerCut(),
	)
	return fs
}

// twins runs a second instance of every service; during the sale one of
// each pair is killed: the first instance of each consumer (its twin takes
// over), and the second gateway (half of the users were on it and move to
// the first) and second payment-webhook.
func twins() fault {
	consumers := []string{stacktest.SlotReleasedConsumer, stacktest.TimeoutConsumer, stacktest.Notifier, stacktest.Popularity}
	return fault{name: "two instances each, one killed",
		setup: func(t *testing.T, su *suite) {
			for _, n := range append(slices.Clone(consumers), stacktest.PaymentWebhook, stacktest.Gateway) {
				p := su.s.StartInstance(t, n)
				if n == stacktest.Gateway {
					su.gateways = append(su.gateways, p.URL())
				}
			}
		},
		inject: func(t *testing.T, su *suite) {
			for _, n := range consumers {
				su.s.Kill(t, n)
			}
			su.s.Kill(t, stacktest.Gateway+"#2")
			su.s.Kill(t, stacktest.PaymentWebhook+"#2")
		},
		after: func(t *testing.T, su *suite, _ string, _ []*stacktest.Buyer) {
			su.gateways = su.gateways[:1]
			for _, n := range consumers {
				su.s.Restart(t, n)
			}
		}}
}

// TestFaults runs a sale per fault on one stack and checks after each that
// nothing was lost or done twice. FAULT_SOAK=1 runs more users and
// FAULT_ROUNDS random faults picked with the run's seed (logged;
// BOXOFFICE_TEST_SEED replays it).
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault suite")
	}
	cfg := loadConfig(t)
	s := stacktest.Start(t, stacktest.Options{Services: allServices, Faults: true, LogDir: os.Getenv("FAULT_LOGDIR"), Env: map[string]string{
		"MAX_RETRIES": "2", "SAFETY_NET_INTERVAL": "1s", "OUTBOX_SWEEP_AGE": "2s",
		// the breaker, opened by a provider outage, probes after a second
		"PROVIDER_BREAKER_OPEN": "1s",
	}})
	su := &suite{cfg: cfg, s: s, f: s.Faults(), tap: stacktest.NewTap(t, s.AMQPURL),
		gateways: []string{s.GatewayURL()}, poison: map[string]int{}}
	fs := su.faults()
	if cfg.soak {
		rng := rand.New(rand.NewPCG(cfg.seed, 15))
		var picked []fault
		for range cfg.rounds {
			picked = append(picked, fs[rng.IntN(len(fs))])
		}
		fs = picked
	}
	for i, f := range fs {
		if !t.Run(f.name, func(t *testing.T) { su.round(t, i, f) }) {
			t.Logf("round %q failed; the next rounds run on the same stack", f.name)
		}
	}
	t.Logf("fault matrix (seed %d):\n%s", cfg.seed, su.matrix())
	if len(su.knownHits) > 0 {
		t.Logf("KNOWN ISSUES seen (see docs/testing.md, fault matrix): %v", su.knownHits)
	}
}

// fail reports a failed check: an error, or a KNOWN ISSUE line when the
// fault lists the check as known (and FAULT_STRICT is not 1).
func (su *suite) fail(t *testing.T, f fault, check, format string, args ...any) {
	t.Helper()
	if why := f.known[check]; why != "" && os.Getenv("FAULT_STRICT") != "1" {
		t.Logf("KNOWN ISSUE (%s; FAULT_STRICT=1 fails on it): "+format, append([]any{why}, args...)...)
		su.knownHits = append(su.knownHits, f.name+": "+check)
		return
	}
	t.Errorf(format, args...)
}

func (su *suite) matrix() string {
	var b strings.Builder
	b.WriteString("| fault | users | admitted | sold | fault lasted | all users final after | client retries | booking_completed dups absorbed | your_turn / timeout dups (max copies) | ledger caught up | RabbitMQ drained |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range su.rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %v | %v | %d | %d | %d / %d (%d) | %v | %v |\n", r.fault, r.users, r.admitted, r.sold,
			r.faultFor.Round(100*time.Millisecond), r.final.Round(100*time.Millisecond), r.retried, r.dupCompleted,
			r.dupTurns, r.dupTimeouts, r.maxCopies, r.ledgerLag.Round(100*time.Millisecond), r.rabbitDrain.Round(100*time.Millisecond))
	}
	return b.String()
}

// round runs one sale with fault f and checks it.
func (su *suite) round(t *testing.T, i int, f fault) {
	cfg, s := su.cfg, su.s
	ev := fmt.Sprintf("fault-%02d", i)
	if f.setup != nil {
		f.setup(t, su)
	}
	hold, grace := cmp.Or(f.hold, 3*time.Second), cmp.Or(f.grace, time.Second)
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: f.name, Rows: cfg.rows, SeatsPerRow: cfg.per, Capacity: cfg.room,
		HoldSeconds: hold.Seconds(), GraceSeconds: grace.Seconds()})

	sale := s.StartSale(t, stacktest.SaleOptions{Event: ev, Users: cfg.users, Seed: cfg.seed, Round: i, Gateways: su.gateways})
	time.Sleep(1500 * time.Millisecond)
	f.inject(t, su)
	faultEnd := time.Now()
	r := row{fault: f.name, users: cfg.users, faultFor: faultEnd.Sub(sale.Start) - 1500*time.Millisecond}
	sale.Wait(cfg.finalWithin)
	r.retried = sale.Retried()
	defer func() { su.rows = append(su.rows, r) }()
	if f.after != nil { // runs even when a check failed: it restores the stack
		defer f.after(t, su, ev, sale.Buyers)
	}

	// every process the fault did not kill is still running (one that
	// exited is restarted, so the next rounds have a whole stack)
	for _, n := range allServices {
		for _, id := range []string{n, n + "#2"} {
			if p := s.Service(id); p != nil && p.Exited() && !p.Killed() {
				t.Errorf("%s exited during the round; log:\n%s", id, tailOf(p.Log))
				if id == n {
					s.Restart(t, n)
				} else {
					s.Kill(t, id) // marks it as gone
				}
			}
		}
	}
	factsWait := 30 * time.Second
	if f.known["facts"] != "" {
		factsWait = 5 * time.Second // known to be missing until the replay
	}
	dlqFailed := false
	rep := s.CheckSale(t, sale, stacktest.SaleCheck{Tap: su.tap, DeadLetters: su.poison, ExactlyOnce: f.exactlyOnce, FactsWait: factsWait,
		Fail: func(tb testing.TB, check, format string, args ...any) {
			tb.Helper()
			dlqFailed = dlqFailed || check == "dlq"
			su.fail(t, f, check, format, args...)
		}})
	r.admitted, r.sold, r.dupCompleted = rep.Admitted, rep.Sold, rep.DupCompleted
	r.dupTurns, r.dupTimeouts, r.maxCopies = rep.DupTurns, rep.DupTimeouts, rep.MaxCopies
	r.ledgerLag, r.rabbitDrain = rep.LedgerLag, rep.RabbitMQDrain
	if !rep.LastFinal.IsZero() {
		r.final = max(0, rep.LastFinal.Sub(faultEnd))
	}
	if dlqFailed {
		// the next round starts from the expected dead letters only (a
		// fault with known dead letters replays them in its after)
		for name, d := range rep.Queues {
			if strings.HasSuffix(name, ".dlq") && d.Ready != su.poison[name] && f.known["dlq"] == "" {
				purge(t, s.AMQPURL, name)
			}
		}
	}
	t.Logf("%s: %d users (%d joined after the last seat sold), %d admitted, %d sold; fault %v, all final %v after it; %d client retries; dups absorbed: booking_completed %d, your_turn %d, timeout %d; ledger %v, RabbitMQ %v",
		f.name, r.users, rep.TooLate, r.admitted, r.sold, r.faultFor.Round(100*time.Millisecond), r.final.Round(100*time.Millisecond), r.retried,
		r.dupCompleted, r.dupTurns, r.dupTimeouts, r.ledgerLag.Round(100*time.Millisecond), r.rabbitDrain.Round(100*time.Millisecond))
}

// replayDLQs runs scripts/replay-dlq.sh for both work queues, as the
// runbook says, and waits until the work queues and DLQs are empty.
func replayDLQs(t *testing.T, su *suite) {
	t.Helper()
	root, err := redistest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{amqpx.SlotReleasedQueue, amqpx.TimeoutQueue} {
		cmd := exec.Command(filepath.Join(root, "scripts", "replay-dlq.sh"), "--vhost", amqptestVhost(su.s.AMQPURL), q)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("replay-dlq.sh %s: %v\n%s", q, err, out)
		}
		t.Logf("replay-dlq.sh %s: %s", q, strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0])
		su.poison[amqpx.DeadLetterQueue(q)] = 0
	}
	var qs map[string]stacktest.QueueDepth
	if _, ok := stacktest.Eventually(30*time.Second, func() bool {
		qs = stacktest.Queues(t, su.s.AMQPURL)
		for _, q := range []string{amqpx.SlotReleasedQueue, amqpx.TimeoutQueue} {
			if qs[q] != (stacktest.QueueDepth{}) || qs[amqpx.DeadLetterQueue(q)] != (stacktest.QueueDepth{}) {
				return false
			}
		}
		return true
	}); !ok {
		t.Errorf("after the replay: %v", qs)
	}
}

// poisonFault puts one message that fails until an operator fixes its
// cause into each work queue: a slot-released and a timeout for an event
// whose Redis keys all have the wrong type (every script on it fails with
// WRONGTYPE). Each is retried MAX_RETRIES times, then dead-lettered; once
// the keys are deleted (the fix), scripts/replay-dlq.sh moves each back and
// the consumers ack it (the event is unknown: dropped).
func poisonFault() fault {
	const ev = "poisoned"
	return fault{name: "poison message in each queue",
		inject: func(t *testing.T, su *suite) {
			for _, k := range booking.EventKeys(su.s.Prefix, ev) {
				if err := su.s.Redis.RPush(context.Background(), k, "not-the-right-type").Err(); err != nil {
					t.Fatal(err)
				}
			}
			publish(t, su.s.AMQPURL, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey,
				fmt.Sprintf(`{"event_id":%q,"reason":"poison","timestamp":%d}`, ev, time.Now().Unix()))
			publish(t, su.s.AMQPURL, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey,
				fmt.Sprintf(`{"user_id":"victim","event_id":%q,"sequence":1,"expire_time":%d,"expire_time_ms":%d,"scheduled_at":%d}`,
					ev, time.Now().Unix(), time.Now().UnixMilli(), time.Now().Unix()))
			su.poison[amqpx.DeadLetterQueue(amqpx.SlotReleasedQueue)] = 1
			su.poison[amqpx.DeadLetterQueue(amqpx.TimeoutQueue)] = 1
		},
		after: func(t *testing.T, su *suite, _ string, _ []*stacktest.Buyer) {
			if err := su.s.Redis.Del(context.Background(), booking.EventKeys(su.s.Prefix, ev)...).Err(); err != nil { // the fix
				t.Fatal(err)
			}
			replayDLQs(t, su)
		}}
}
