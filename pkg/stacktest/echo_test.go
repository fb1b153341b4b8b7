package stacktest

import (
	"bytes"
	"testing"
)

// Echoed output comes out in whole lines, each with the service's prefix,
// however the process's writes split them.
func TestLinePrefixer(t *testing.T) {
	var out bytes.Buffer
	l := &linePrefixer{w: &out, prefix: "[svc] "}
	for _, w := range []string{"one\ntw", "o\n", "", "three", "\nfour\nfive\n"} {
		if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if want := "[svc] one\n[svc] two\n[svc] three\n[svc] four\n[svc] five\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
