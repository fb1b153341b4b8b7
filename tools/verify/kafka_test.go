package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// publish puts rec's log and draw on a new embedded Kafka broker as the
// gateways and the promoter publish them (admission_logged,
// queue_randomized, a later phase's with its phase), with change applied to the log's facts first, and
// returns the broker's addresses.
func publish(t *testing.T, rec Record, change func([]events.Event) []events.Event) []string {
	t.Helper()
	brokers := kafkatest.Start(t)
	p, err := events.NewKafkaProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	var evs []events.Event
	for _, e := range rec.Log {
		evs = append(evs, events.AdmissionLogged(rec.EventID, e.Index, e.Seq, e.UserHash, e.Reason, e.Prev, e.Hash, time.UnixMilli(e.AtMs)))
	}
	// racing gateways publish some entries twice, and another event's
	// log shares the topic
	evs = append(evs, evs[min(100, len(evs)):min(200, len(evs))]...)
	evs = append(evs, events.AdmissionLogged("other", 1, 1, "u", fairness.ReasonJoined, "p", "h", time.Now()))
	evs = change(evs)
	if d := rec.Draw; d.Status == fairness.DrawDrawn {
		evs = append(evs, events.QueueRandomized(rec.EventID, d.Count, d.Seed, d.Commit, d.Digest, d.Beacon, time.Now()))
	}
	for _, d := range rec.PhaseDraws {
		evs = append(evs, events.PhaseQueueRandomized(rec.EventID, d.Phase, d.Count, d.Seed, d.Commit, d.Digest, d.Beacon, time.Now()))
	}
	ctx := context.Background()
	for len(evs) > 0 {
		n := min(len(evs), 1000)
		if err := p.Publish(ctx, evs[:n]...); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
	return brokers
}

// The sale's record read from Kafka (the draw's list from the gateway)
// verifies as the gateway's does; an entry changed on Kafka, a copy of an
// entry that differs, or a gateway's draw that is not Kafka's is caught.
func TestVerifyFromKafka(t *testing.T) {
	s := runSale(t)
	ctx := context.Background()
	rec, err := Fetch(ctx, http.DefaultClient, s.srv.URL, "tour")
	if err != nil {
		t.Fatal(err)
	}
	same := func(evs []events.Event) []events.Event { return evs }
	brokers := publish(t, rec, same)
	var out bytes.Buffer
	if err := run(ctx, &out, s.srv.URL, "tour", issuer, s.tickets["u42"], "", "", strings.Join(brokers, ",")); err != nil {
		t.Fatalf("the sale from Kafka does not verify: %v", err)
	}
	if want := "10001 admissions, chain intact, no signed head (Kafka carries none), 0 overtakes"; !strings.Contains(out.String(), want) ||
		!strings.Contains(out.String(), "0 who joined later") {
		t.Fatalf("output: %s", out.String())
	}
	k, err := FromKafka(ctx, brokers, events.ClientConfig{}, http.DefaultClient, s.srv.URL, "tour")
	if err != nil || len(k.Log) != len(rec.Log) || k.Log[4999] != rec.Log[4999] || len(k.Draw.Entries) != prequeued {
		t.Fatalf("read from Kafka: %d entries, %d drawn, %v", len(k.Log), len(k.Draw.Entries), err)
	}
	if _, err := FromKafka(ctx, brokers, events.ClientConfig{}, http.DefaultClient, "", "tour"); err == nil ||
		!strings.Contains(err.Error(), "the draw's list is not on Kafka") {
		t.Fatalf("a drawn event without the gateway: %v", err)
	}

	for _, tc := range []struct {
		name, want string
		change     func([]events.Event) []events.Event
	}{
		{"an entry changed", "entry 5000 was changed", func(evs []events.Event) []events.Event {
			evs[4999].OccurredAt = evs[4999].OccurredAt.Add(time.Millisecond)
			return evs
		}},
		{"a copy that differs", "two different entries 150", func(evs []events.Event) []events.Event {
			evs[len(evs)-52].OccurredAt = evs[len(evs)-52].OccurredAt.Add(time.Millisecond)
			return evs
		}},
		{"an entry missing", "an entry is missing", func(evs []events.Event) []events.Event {
			return append(evs[:700], evs[701:len(evs)-101]...)
		}},
	} {
		err := run(ctx, &out, s.srv.URL, "tour", issuer, "", "", "", strings.Join(publish(t, rec, tc.change), ","))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	other := rec
	other.Draw.Digest = strings.Repeat("0", 64)
	if err := run(ctx, &out, s.srv.URL, "tour", issuer, "", "", "", strings.Join(publish(t, other, same), ",")); err == nil ||
		!strings.Contains(err.Error(), "is not the one on Kafka") {
		t.Errorf("a gateway's draw that is not Kafka's: %v", err)
	}
	// Kafka names a beacon (its source with a space, escaped) the
	// gateway's draw does not have
	beacon := rec
	beacon.Draw.Beacon = fairness.Beacon{Round: 3, Source: "NIST beacon v2", Value: strings.Repeat("5a", 32)}
	k, err = FromKafka(ctx, publish(t, beacon, same), events.ClientConfig{}, http.DefaultClient, "", "tour")
	if err == nil || !strings.Contains(err.Error(), "the draw's list is not on Kafka") {
		t.Fatalf("a drawn event with a beacon, without the gateway: %v", err)
	}
	if err := run(ctx, &out, s.srv.URL, "tour", issuer, "", "", "", strings.Join(publish(t, beacon, same), ",")); err == nil ||
		!strings.Contains(err.Error(), "beacon round 0") || !strings.Contains(err.Error(), "is not the one on Kafka (round 3") {
		t.Errorf("a gateway's beacon that is not Kafka's: %v", err)
	}
}

// A phased sale read from Kafka: each phase's queue_randomized is its
// own draw, its list read from the gateway's /draw?phase= and checked
// against Kafka's digest; a gateway's phase draw that is not Kafka's is
// caught.
func TestVerifyAPhasedSaleFromKafka(t *testing.T) {
	s := runPhasedSale(t)
	ctx := context.Background()
	rec, err := Fetch(ctx, http.DefaultClient, s.srv.URL, "ph")
	if err != nil {
		t.Fatal(err)
	}
	same := func(evs []events.Event) []events.Event { return evs }
	var out bytes.Buffer
	if err := run(ctx, &out, s.srv.URL, "ph", issuer, "", "", "", strings.Join(publish(t, rec, same), ",")); err != nil {
		t.Fatalf("the phased sale from Kafka does not verify: %v", err)
	}
	if !strings.Contains(out.String(), "draw none, phase general drawn (100 pre-queued), 160 admissions") {
		t.Fatalf("output: %s", out.String())
	}
	other := rec
	other.PhaseDraws = []fairness.DrawDoc{rec.PhaseDraws[0]}
	other.PhaseDraws[0].Digest = strings.Repeat("0", 64)
	if err := run(ctx, &out, s.srv.URL, "ph", issuer, "", "", "", strings.Join(publish(t, other, same), ",")); err == nil ||
		!strings.Contains(err.Error(), "the gateway's draw of phase general") {
		t.Errorf("a gateway's phase draw that is not Kafka's: %v", err)
	}
	other.PhaseDraws[0] = rec.PhaseDraws[0]
	other.PhaseDraws[0].Beacon.Value = strings.Repeat("00", 32)
	if err := run(ctx, &out, s.srv.URL, "ph", issuer, "", "", "", strings.Join(publish(t, other, same), ",")); err == nil ||
		!strings.Contains(err.Error(), "beacon round 12345") {
		t.Errorf("a gateway's phase draw whose beacon is not Kafka's: %v", err)
	}
}
