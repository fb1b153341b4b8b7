// Package promx makes boxoffice's Prometheus collectors: every metric of a
// subsystem is named boxoffice_<subsystem>_<name> and registered as it is
// made, so a package declares each metric once, in one line, and cannot
// forget to register it. [New] panics when a name is registered twice (a
// package's metrics are made once per registry); [Shared] reuses the
// collector a registry already holds, for metrics that several servers or
// producers of one process share.
package promx

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace starts the name of every boxoffice metric.
const Namespace = "boxoffice"

// Factory makes the collectors of one subsystem. A nil registry makes
// them unregistered (tests that read the collectors directly).
type Factory struct {
	reg       prometheus.Registerer
	subsystem string
	shared    bool
	err       error
}

// New returns a factory for subsystem that registers each collector on
// reg with MustRegister: a name registered twice on reg panics.
func New(reg prometheus.Registerer, subsystem string) *Factory {
	return &Factory{reg: reg, subsystem: subsystem}
}

// Shared returns a factory for subsystem that registers each collector on
// reg or, when reg already holds a collector of the same name and kind,
// returns that one instead. Any other conflict is kept for [Factory.Err].
func Shared(reg prometheus.Registerer, subsystem string) *Factory {
	return &Factory{reg: reg, subsystem: subsystem, shared: true}
}

// Err is the first registration conflict of a [Shared] factory.
func (f *Factory) Err() error { return f.err }

// Counter makes boxoffice_<subsystem>_<name>.
func (f *Factory) Counter(name, help string) prometheus.Counter {
	return add(f, prometheus.NewCounter(prometheus.CounterOpts(f.opts(name, help))))
}

// CounterVec makes boxoffice_<subsystem>_<name>{labels}.
func (f *Factory) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return add(f, prometheus.NewCounterVec(prometheus.CounterOpts(f.opts(name, help)), labels))
}

// Gauge makes boxoffice_<subsystem>_<name>.
func (f *Factory) Gauge(name, help string) prometheus.Gauge {
	return add(f, prometheus.NewGauge(prometheus.GaugeOpts(f.opts(name, help))))
}

// GaugeVec makes boxoffice_<subsystem>_<name>{labels}.
func (f *Factory) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return add(f, prometheus.NewGaugeVec(prometheus.GaugeOpts(f.opts(name, help)), labels))
}

// Histogram makes boxoffice_<subsystem>_<name> with buckets.
func (f *Factory) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	o := f.opts(name, help)
	return add(f, prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: o.Namespace, Subsystem: o.Subsystem,
		Name: o.Name, Help: o.Help, Buckets: buckets}))
}

// HistogramVec makes boxoffice_<subsystem>_<name>{labels} with buckets.
func (f *Factory) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	o := f.opts(name, help)
	return add(f, prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: o.Namespace, Subsystem: o.Subsystem,
		Name: o.Name, Help: o.Help, Buckets: buckets}, labels))
}

// Desc describes boxoffice_<subsystem>_<name>{labels} for a custom
// prometheus.Collector, which registers itself: nothing is registered.
func (f *Factory) Desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, f.subsystem, name), help, labels, nil)
}

func (f *Factory) opts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: Namespace, Subsystem: f.subsystem, Name: name, Help: help}
}

func add[C prometheus.Collector](f *Factory, c C) C {
	switch {
	case f.reg == nil:
		return c
	case !f.shared:
		f.reg.MustRegister(c)
		return c
	}
	c, err := RegisterOrReuse(f.reg, c)
	if err != nil && f.err == nil {
		f.err = err
	}
	return c
}

// RegisterOrReuse registers c on reg or, when reg already holds a
// collector of the same name and kind (two servers of one process), returns
// that one.
func RegisterOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register metrics: %w", err)
}
