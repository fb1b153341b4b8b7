package platform

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// amqpx and events are libraries below the process: the shared
// configuration reaches them through AMQPOptions and KafkaClient, and the
// request id through pkg/requestid, never by importing pkg/service.
func TestBrokerPackagesDoNotImportService(t *testing.T) {
	for _, dir := range []string{"../amqpx", "../events"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/boxoffice/boxoffice/pkg/service" {
					t.Errorf("%s imports pkg/service", f)
				}
			}
		}
	}
}
