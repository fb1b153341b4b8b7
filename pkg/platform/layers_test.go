package platform

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/boxoffice/boxoffice/"

// imports returns the imports of the non-test files of the package in dir.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out = append(out, p)
		}
	}
	return out
}

// A request walks downhill: the handler (gateway, pkg/httpapi for gin, the
// gateway's fastserver for fasthttp) calls auth and the store, the store writes the outbox,
// the admission package announces it. Each lower package imports only what
// lies below it, and the ones below the edge know no HTTP.
func TestLayersImportOnlyBelow(t *testing.T) {
	transport := []string{"net/http", "github.com/gin-gonic/gin", "github.com/valyala/fasthttp"}
	for _, tc := range []struct {
		dir         string
		boxoffice   []string // the repository's packages it may import
		noTransport bool
	}{
		{"../ids", nil, true},
		{"../auth", []string{"pkg/ids"}, true},
		{"../redisfn", []string{"lua"}, true},
		{"../fairness", nil, true},
		{"../booking", []string{"lua", "pkg/fairness", "pkg/ids", "pkg/redisfn"}, true},
		{"../messages", nil, true},
		{"../admission", []string{"pkg/amqpx", "pkg/booking", "pkg/events", "pkg/ids", "pkg/messages", "pkg/pass", "pkg/promx", "pkg/requestid", "pkg/retry"}, true},
		{"../promx", nil, true},
		{"../chance", nil, true},
	} {
		for _, imp := range imports(t, tc.dir) {
			if rest, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(tc.boxoffice, rest) {
				t.Errorf("%s imports %s, which is not below it", tc.dir, rest)
			}
			if tc.noTransport && slices.Contains(transport, imp) {
				t.Errorf("%s imports %s: transports belong at the edge (pkg/httpapi, the services)", tc.dir, imp)
			}
		}
	}
}

// amqpx and events are libraries below the process: the shared
// configuration reaches them through AMQPOptions and KafkaClient, and the
// request id through pkg/requestid, never by importing pkg/service.
func TestBrokerPackagesDoNotImportService(t *testing.T) {
	for _, dir := range []string{"../amqpx", "../events"} {
		for _, imp := range imports(t, dir) {
			if imp == module+"pkg/service" {
				t.Errorf("%s imports pkg/service", dir)
			}
		}
	}
}

// pkg/httpapi is the error format and the middleware only: the booking
// errors' statuses are pkg/bookinghttp's, the fasthttp server the
// gateway's own.
func TestHTTPAPIKnowsNeitherBookingNorFasthttp(t *testing.T) {
	for _, imp := range imports(t, "../httpapi") {
		if imp == module+"pkg/booking" || imp == "github.com/valyala/fasthttp" {
			t.Errorf("pkg/httpapi imports %s", imp)
		}
	}
}
