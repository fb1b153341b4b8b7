// Command kafkabench measures what publishing booking_request facts costs
// the publishing process in CPU per fact: through events.KafkaProducer
// (kafka-go's Writer, what every service uses) or through franz-go's kgo
// client with the same messages, in batches like the gateway's relay
// (-batch facts per call from -workers goroutines), as fast as it goes or
// at a fixed total -rate. The CPU is the process's own (getrusage), so
// the broker must be another process:
//
//	(cd services/kafka-dev && go build -o /tmp/kafka-dev .)
//	KAFKA_DEV_ADDR=127.0.0.1:19292 /tmp/kafka-dev &
//	(cd tools && go build -o /tmp/kafkabench ./kafkabench)
//	for c in kafka-go franz-go; do /tmp/kafkabench -client $c -rate 20000; done
//
// -client none only builds the messages (events.Message), the part both
// clients share. It printed the kafka-go and franz-go figures of
// docs/benchmarks.md "Kafka compression".
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/boxoffice/boxoffice/pkg/events"
)

func main() {
	client := flag.String("client", "kafka-go", "kafka-go, franz-go or none")
	broker := flag.String("broker", "127.0.0.1:19292", "the broker, host:port")
	batch := flag.Int("batch", 23, "facts per publish call (the gateway's relay sent 23 on average under load)")
	workers := flag.Int("workers", 4, "goroutines publishing at once (the relay's workers)")
	dur := flag.Duration("d", 4*time.Second, "how long to publish")
	rate := flag.Float64("rate", 0, "facts per second in all (0: as fast as it goes)")
	flag.Parse()
	publish, err := publisher(*client, *broker)
	if err != nil {
		log.Fatal(err)
	}
	if err := publish(facts(0, 1, *batch)); err != nil { // connections and metadata
		log.Fatal(err)
	}
	var every time.Duration
	if *rate > 0 {
		every = time.Duration(float64(time.Second) * float64(*batch**workers) / *rate)
	}
	var n atomic.Int64
	c0, t0 := cpu(), time.Now()
	var wg sync.WaitGroup
	for w := range *workers {
		wg.Go(func() {
			next := time.Now()
			for k := int64(1); time.Since(t0) < *dur; k += int64(*batch) {
				if every > 0 {
					next = next.Add(every)
					time.Sleep(time.Until(next))
				}
				if err := publish(facts(w, k, *batch)); err != nil {
					log.Fatal(err)
				}
				n.Add(int64(*batch))
			}
		})
	}
	wg.Wait()
	el, c := time.Since(t0), cpu()-c0
	fmt.Printf("%-8s batch %d, %d workers: %d facts, %.0f/s, CPU %.2f µs per fact\n", *client, *batch, *workers,
		n.Load(), float64(n.Load())/el.Seconds(), float64(c.Nanoseconds())/1000/float64(n.Load()))
}

// facts are n booking_request facts of worker w's concert, from sequence k.
func facts(w int, k int64, n int) []events.Event {
	evs := make([]events.Event, n)
	for i := range evs {
		seq := k + int64(i)
		evs[i] = events.BookingRequested(fmt.Sprintf("concert-%d", w), fmt.Sprintf("user-%d-%d", w, seq), seq, time.Now())
	}
	return evs
}

func publisher(client, broker string) (func([]events.Event) error, error) {
	ctx := context.Background()
	switch client {
	case "none":
		return func(evs []events.Event) error {
			for _, e := range evs {
				if _, err := events.Message(e); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case "kafka-go":
		p, err := events.NewKafkaProducer([]string{broker}, events.WithClientConfig(events.ClientConfig{Compression: "lz4"}))
		if err != nil {
			return nil, err
		}
		return func(evs []events.Event) error { return p.Publish(ctx, evs...) }, nil
	case "franz-go":
		// the producer's settings: acks=all, lz4, no linger
		cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ProducerLinger(0),
			kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			return nil, err
		}
		return func(evs []events.Event) error {
			recs := make([]*kgo.Record, len(evs))
			for i, e := range evs {
				m, err := events.Message(e)
				if err != nil {
					return err
				}
				r := &kgo.Record{Topic: m.Topic, Key: m.Key, Value: m.Value, Headers: make([]kgo.RecordHeader, len(m.Headers))}
				for j, h := range m.Headers {
					r.Headers[j] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
				}
				recs[i] = r
			}
			return cl.ProduceSync(ctx, recs...).FirstErr()
		}, nil
	}
	return nil, fmt.Errorf("unknown client %q", client)
}

// cpu is the process's CPU time so far, user and system.
func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
