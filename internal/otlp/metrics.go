package otlp

import "github.com/prometheus/client_golang/prometheus"

var (
	descExports = prometheus.NewDesc("foreman_otlp_exports_total", "OTLP exports of spend taken.", nil, nil)
	descPoints  = prometheus.NewDesc("foreman_otlp_points_total", "Spend points handed to the engine.", nil, nil)
	descRefused = prometheus.NewDesc("foreman_otlp_refused_total", "OTLP exports (or points) refused, by reason: token, agent, unit, body, point, busy, excess, share.", []string{"reason"}, nil)
)

// Collector exports the receiver's counters to Prometheus.
func (r *Receiver) Collector() prometheus.Collector { return collector{r} }

type collector struct{ r *Receiver }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descExports
	ch <- descPoints
	ch <- descRefused
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	n := c.r.Counts()
	ch <- prometheus.MustNewConstMetric(descExports, prometheus.CounterValue, float64(n.Exports))
	ch <- prometheus.MustNewConstMetric(descPoints, prometheus.CounterValue, float64(n.Points))
	for _, why := range Refusals() {
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(n.Refused[why]), why.String())
	}
}
