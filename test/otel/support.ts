import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** A reader we collect from on demand (no timers). */
class CollectingReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** A real SDK tracer provider with an in-memory exporter, and a meter provider we can collect. */
export function otelHarness() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    exporter,
    tracer: tracerProvider.getTracer('readback-test'),
    meter: meterProvider.getMeter('readback-test'),
    /** Every data point of the named metric, as attributes and value. */
    async points(name: string): Promise<{ attributes: Record<string, unknown>; value: unknown }[]> {
      const metrics = await collect(reader);
      const found = metrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
      return (found?.dataPoints ?? []).map((p) => ({ attributes: { ...p.attributes }, value: p.value }));
    },
    async allMetrics(): Promise<ResourceMetrics> {
      return collect(reader);
    },
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

async function collect(reader: MetricReader): Promise<ResourceMetrics> {
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length) throw new Error(`metric collection failed: ${errors.join('; ')}`);
  return resourceMetrics;
}
