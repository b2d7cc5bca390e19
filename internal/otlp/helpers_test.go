package otlp

import (
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

type atomicInt = atomic.Int64

func metricUnit(u string) metric.Float64CounterOption  { return metric.WithUnit(u) }
func metricUnitInt(u string) metric.Int64CounterOption { return metric.WithUnit(u) }
func metricOpt(kv ...attribute.KeyValue) metric.AddOption {
	return metric.WithAttributes(kv...)
}
func metricOptInt(kv ...attribute.KeyValue) metric.AddOption { return metric.WithAttributes(kv...) }
