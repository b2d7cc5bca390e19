package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the cluster's counters, for /metrics.
type Metrics struct {
	Renewals  *prometheus.CounterVec
	Takeovers prometheus.Counter
	Deposed   prometheus.Counter
	Held      prometheus.Gauge
	Append    prometheus.Histogram
}

// NewMetrics makes the cluster's metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		Renewals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foreman_cluster_lease_renewals_total",
			Help: "Lease renewals by result: ok, retry (the answer was lost, the renewal landed), failed, deposed."}, []string{"result"}),
		Takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "foreman_cluster_takeovers_total",
			Help: "Leases this process took: builds it started leading."}),
		Deposed: prometheus.NewCounter(prometheus.CounterOpts{Name: "foreman_cluster_deposed_total",
			Help: "Builds this process lost to another's takeover."}),
		Held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "foreman_cluster_leases_held",
			Help: "Builds this process leads now."}),
		Append: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "foreman_cluster_append_seconds",
			Help:    "Time to append one commit to a build's stream, until JetStream acknowledged it.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14)}),
	}
	for _, r := range []string{"ok", "retry", "failed", "deposed"} {
		m.Renewals.WithLabelValues(r) // a rate over a fresh process is 0, not absent
	}
	return m
}

// Collectors lists the metrics, to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Renewals, m.Takeovers, m.Deposed, m.Held, m.Append}
}

func (m *Metrics) renewal(result string) {
	if m != nil {
		m.Renewals.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) appended(d time.Duration) {
	if m != nil {
		m.Append.Observe(d.Seconds())
	}
}
