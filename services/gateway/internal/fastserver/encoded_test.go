package fastserver

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "br, gzip": true, "gzip;q=0.5": true, "*": true,
		"gzip;q=0": false, "gzip; q=0, identity": false, "identity": false, "br": false, "x-gzip-ish": false,
	} {
		if got := AcceptsGzip(header); got != want {
			t.Errorf("AcceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// Encode keeps the gzip encoding only when it is smaller; both
// representations have their own ETag, and If-None-Match with either is a
// match.
func TestEncode(t *testing.T) {
	big := []byte(`{"status":"` + strings.Repeat("a", 4000) + `"}`)
	e := Encode(big, gzip.BestSpeed)
	if e.Gzip == nil || len(e.Gzip) >= len(big) || e.GzipETag == "" || e.GzipETag == e.ETag {
		t.Fatalf("big body: gzip %d bytes, ETags %s %s", len(e.Gzip), e.ETag, e.GzipETag)
	}
	zr, err := gzip.NewReader(bytes.NewReader(e.Gzip))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(zr); !bytes.Equal(got, big) {
		t.Fatal("the gzip encoding does not decode to the body")
	}
	if again := Encode(big, gzip.BestSpeed); again.ETag != e.ETag || again.GzipETag != e.GzipETag {
		t.Fatal("the same bytes got another ETag")
	}
	for _, tc := range []struct {
		accept, coding, etag string
	}{{"", "", e.ETag}, {"gzip", "gzip", e.GzipETag}, {"gzip;q=0", "", e.ETag}} {
		body, etag, coding := e.Select(tc.accept)
		if coding != tc.coding || etag != tc.etag || (coding == "" && !bytes.Equal(body, big)) {
			t.Errorf("Select(%q) = %d bytes, %s, %q", tc.accept, len(body), etag, coding)
		}
	}
	for header, want := range map[string]bool{
		e.ETag: true, e.GzipETag: true, "W/" + e.ETag: true, `"x", ` + e.GzipETag: true, "*": true,
		"": false, `"x"`: false, strings.Trim(e.ETag, `"`): false,
	} {
		if got := e.NotModified(header); got != want {
			t.Errorf("NotModified(%q) = %v, want %v", header, got, want)
		}
	}

	small := Encode([]byte(`{"a":1}`), gzip.BestSpeed)
	if small.Gzip != nil || small.GzipETag != "" || small.NotModified(`"-gzip"`) {
		t.Fatalf("a small body got a gzip encoding: %+v", small)
	}
	if _, _, coding := small.Select("gzip"); coding != "" {
		t.Fatal("a small body was sent gzip-compressed")
	}
	if none := Encode(big, gzip.NoCompression); none.Gzip != nil {
		t.Fatal("gzip.NoCompression compressed")
	}
}

// seatMapBody is a seat map of 400 rows of 500 seats in the gateway's
// wire form, a fraction of the seats held or sold at random.
func seatMapBody(taken float64) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.WriteString(`{"event_id":"bench","sections":[`)
	for row := range 400 {
		if row > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"row":"R%d","first":1,"status":"`, row)
		for range 500 {
			c := byte('a')
			if r.Float64() < taken {
				c = "hs"[r.IntN(2)]
			}
			b.WriteByte(c)
		}
		b.WriteString(`","section":0}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkEncodeSeatMap: what a snapshot of a 200,000-seat map costs to
// prepare at each gzip level, free and a third taken at random (the
// gzip/plain bytes ratio is reported as ratio).
func BenchmarkEncodeSeatMap(b *testing.B) {
	for _, taken := range []float64{0, 0.3} {
		body := seatMapBody(taken)
		for _, level := range []int{gzip.BestSpeed, 3, gzip.DefaultCompression} {
			b.Run(fmt.Sprintf("taken=%.1f/level=%d", taken, level), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				var e *Encoded
				for b.Loop() {
					e = Encode(body, level)
				}
				b.ReportMetric(float64(len(e.Gzip))/float64(len(body)), "ratio")
			})
		}
	}
}
