// Claude Code's metric names through the OpenTelemetry JS SDK's own OTLP
// exporters (what Claude Code uses): argv url token agent json|proto cumulative|delta
const { MeterProvider, PeriodicExportingMetricReader, AggregationTemporality } = require('@opentelemetry/sdk-metrics');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const [url, token, agent, kind, temporality] = process.argv.slice(2);
const { OTLPMetricExporter } = require(kind === 'proto' ? '@opentelemetry/exporter-metrics-otlp-proto' : '@opentelemetry/exporter-metrics-otlp-http');
const exporter = new OTLPMetricExporter({
  url: url + '/v1/metrics',
  headers: { Authorization: 'Bearer ' + token },
  temporalityPreference: temporality === 'delta' ? AggregationTemporality.DELTA : AggregationTemporality.CUMULATIVE,
});
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3600000 });
const mp = new MeterProvider({ resource: resourceFromAttributes({ 'foreman.agent': agent, 'service.name': 'claude-code' }), readers: [reader] });
const meter = mp.getMeter('com.anthropic.claude_code');
const cost = meter.createCounter('claude_code.cost.usage', { unit: 'USD' });
const tokens = meter.createCounter('claude_code.token.usage', { unit: 'tokens' });
(async () => {
  const session = { 'session.id': 's1', model: 'claude-sonnet-4-5' };
  cost.add(0.5, session);
  tokens.add(1200, { ...session, type: 'input' });
  await reader.forceFlush();
  cost.add(0.25, session);
  await reader.forceFlush();
  await mp.shutdown();
  console.log('exported');
})().catch((e) => { console.error(e); process.exit(1); });
