package platform

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/service"
)

func TestDialIsReadyAndWorks(t *testing.T) {
	c := testCommon(t)
	ctx := context.Background()
	d, err := Dial(ctx, "test", c, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if rep := d.Admin.Ready(ctx); rep.Status != "ok" || len(rep.Checks) != 3 {
		t.Fatalf("readiness %+v", rep)
	}
	// the store, publisher and producer are usable through the Announcer
	if _, err := d.Store.CreateEvent(ctx, booking.EventConfig{ID: "e", Rows: 1, SeatsPerRow: 1}); err != nil {
		t.Fatal(err)
	}
	r, err := d.Store.Enqueue(ctx, "e", "u")
	if err != nil || len(r.Outbox) != 2 { // joined, promoted
		t.Fatalf("enqueue %+v %v", r, err)
	}
	if err := d.Announcer.Announce(ctx, "e", r.Outbox); err != nil {
		t.Fatal(err)
	}
	if left, _ := d.Store.Outbox(ctx, "e", 0); len(left) != 0 {
		t.Fatalf("outbox after announce: %+v", left)
	}
}

func TestDialFailsCleanly(t *testing.T) {
	c := service.Common{RedisAddr: []string{"127.0.0.1:1"}, RedisPrefix: "x", AdminAddr: "127.0.0.1:0",
		AMQPURL: "amqp://guest:guest@127.0.0.1:1/", KafkaBrokers: []string{"127.0.0.1:1"}}
	if _, err := Dial(context.Background(), "test", c, zap.NewNop()); err == nil {
		t.Fatal("dial with Redis down succeeded")
	}
}

// A read-only service gets the parts it names and nothing that publishes;
// its readiness checks are those of the parts it has.
func TestDialReadOnly(t *testing.T) {
	c := testCommon(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		parts         []Part
		store, rabbit bool
		checks        []string
	}{
		{"notifier", []Part{Store, RabbitMQ}, true, true, []string{"redis", "rabbitmq"}},
		{"popularity", []Part{Kafka}, false, false, []string{"redis", "kafka"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Dial(ctx, "test", c, zap.NewNop(), ReadOnly(tc.parts...))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if (d.Store != nil) != tc.store || (d.Consumer != nil) != tc.rabbit {
				t.Errorf("store %v consumer %v, want %v %v", d.Store != nil, d.Consumer != nil, tc.store, tc.rabbit)
			}
			if d.Publisher != nil || d.Kafka != nil || d.Announcer != nil || d.Pass != nil {
				t.Errorf("a read-only service got a publisher %v, producer %v, announcer %v or pass signer %v",
					d.Publisher != nil, d.Kafka != nil, d.Announcer != nil, d.Pass != nil)
			}
			rep := d.Admin.Ready(ctx)
			var names []string
			for _, ch := range rep.Checks {
				names = append(names, ch.Name)
			}
			if rep.Status != "ok" || strings.Join(names, ",") != strings.Join(tc.checks, ",") {
				t.Errorf("readiness %+v, want checks %v", rep, tc.checks)
			}
		})
	}
}

// Ledger opens the ledger last, with its readiness check; a ledger that
// cannot be opened fails Dial.
func TestDialLedger(t *testing.T) {
	c := testCommon(t)
	ctx := context.Background()
	d, err := Dial(ctx, "test", c, zap.NewNop(), ReadOnly(Kafka), Ledger(ledgertest.URL(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Ledger == nil {
		t.Fatal("no ledger")
	}
	rep := d.Admin.Ready(ctx)
	if rep.Status != "ok" || len(rep.Checks) != 3 || rep.Checks[2].Name != "postgres" {
		t.Fatalf("readiness %+v, want redis, kafka, postgres", rep)
	}
	if _, err := Dial(ctx, "test", c, zap.NewNop(), ReadOnly(), Ledger("postgres://nobody:x@127.0.0.1:1/none?connect_timeout=2")); err == nil {
		t.Fatal("dial with the ledger unreachable succeeded")
	}
}

// testCommon is a configuration of this test's own Redis prefix, RabbitMQ
// vhost and Kafka cluster.
func testCommon(t *testing.T) service.Common {
	redistest.Client(t) // Redis must answer
	return service.Common{
		RedisAddr:    []string{redistest.Addr},
		RedisPrefix:  strings.TrimSuffix(redistest.Prefix(t), ":"),
		AMQPURL:      amqptest.Vhost(t),
		KafkaBrokers: kafkatest.Start(t),
		AdminAddr:    "127.0.0.1:0",
	}
}
