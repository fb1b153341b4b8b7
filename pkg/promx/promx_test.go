package promx_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/promx"
)

func TestNewRegistersUnderTheSubsystem(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := promx.New(reg, "demo")
	c := f.CounterVec("things_total", "Things.", "kind")
	c.WithLabelValues("a").Inc()
	f.Gauge("level", "Level.").Set(3)
	f.HistogramVec("wait_seconds", "Wait.", []float64{1, 2}, "queue").WithLabelValues("q").Observe(1.5)
	want := `
# HELP boxoffice_demo_level Level.
# TYPE boxoffice_demo_level gauge
boxoffice_demo_level 3
# HELP boxoffice_demo_things_total Things.
# TYPE boxoffice_demo_things_total counter
boxoffice_demo_things_total{kind="a"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "boxoffice_demo_level", "boxoffice_demo_things_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "boxoffice_demo_wait_seconds"); err != nil || n != 1 {
		t.Errorf("histogram series: %d, %v", n, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a name registered twice by New did not panic")
		}
	}()
	promx.New(reg, "demo").Gauge("level", "Level.")
}

func TestSharedReusesTheRegisteredCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := promx.Shared(reg, "demo").Counter("hits_total", "Hits.")
	f := promx.Shared(reg, "demo")
	b := f.Counter("hits_total", "Hits.")
	if f.Err() != nil || a != b {
		t.Fatalf("second Shared counter: err %v, same %v", f.Err(), a == b)
	}
	f.Gauge("hits_total", "Hits.") // same name, another kind
	if f.Err() == nil {
		t.Error("a conflicting collector is not reported")
	}
}

func TestNilRegistryRegistersNothing(t *testing.T) {
	f := promx.New(nil, "demo")
	f.Counter("x_total", "X.").Inc()
	f.Counter("x_total", "X.").Inc() // no registry: no conflict
	if d := f.Desc("up", "Up.", "event_id").String(); !strings.Contains(d, `fqName: "boxoffice_demo_up"`) {
		t.Errorf("desc %s", d)
	}
}
