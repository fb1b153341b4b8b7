package events_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/compress/gzip"
	"github.com/segmentio/kafka-go/compress/lz4"
	"github.com/segmentio/kafka-go/compress/snappy"
	"github.com/segmentio/kafka-go/compress/zstd"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// BenchmarkCompression compresses what the gateway's relay sends to Kafka
// (booking_request facts: keys, envelopes and headers) with each codec
// KAFKA_COMPRESSION offers, in batches of 1, 8 and 64 facts (64 is about
// what kafka-go's writer gathers per produce request when the gateway's
// relay runs at its peak join rate), and
// reports the cost per fact and the compression ratio. It is why the
// default is lz4 (docs/benchmarks.md "Kafka compression"). Run with:
//
//	go test -run '^$' -bench Compression ./pkg/events/
func BenchmarkCompression(b *testing.B) {
	codecs := []struct {
		name  string
		codec compress.Codec
	}{
		{"zstd", &zstd.Codec{}}, {"lz4", &lz4.Codec{}}, {"snappy", &snappy.Codec{}}, {"gzip", &gzip.Codec{}},
	}
	at := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	for _, n := range []int{1, 8, 64} {
		var in bytes.Buffer
		for i := range n {
			m, err := events.Message(events.BookingRequested("ev-2026-finale", fmt.Sprintf("user-%07d", 4_200_000+i*37), int64(1_000_000+i), at.Add(time.Duration(i)*time.Millisecond)))
			if err != nil {
				b.Fatal(err)
			}
			in.Write(m.Key)
			in.Write(m.Value)
			for _, h := range m.Headers {
				in.WriteString(h.Key)
				in.Write(h.Value)
			}
		}
		for _, c := range codecs {
			b.Run(fmt.Sprintf("%s/facts=%d", c.name, n), func(b *testing.B) {
				var out bytes.Buffer
				b.ReportAllocs()
				for b.Loop() {
					out.Reset()
					w := c.codec.NewWriter(&out)
					if _, err := w.Write(in.Bytes()); err != nil {
						b.Fatal(err)
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/fact")
				b.ReportMetric(float64(in.Len())/float64(out.Len()), "ratio")
			})
		}
	}
}
