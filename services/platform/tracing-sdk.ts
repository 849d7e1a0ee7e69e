import { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';

/** How the process exports spans. */
export interface TracingSettings {
  /** `OTEL_TRACES_EXPORTER`: `none` (the default: no SDK at all), `otlp` or `console`. */
  exporter: 'none' | 'otlp' | 'console';
  /** `OTEL_SERVICE_NAME`. */
  serviceName: string;
}

export interface Tracing {
  /** Exports what is buffered and stops (at process exit). */
  shutdown(): Promise<void>;
}

/**
 * Registers the OpenTelemetry Node SDK for this process (the composition root calls it once,
 * before building the service). The SDK reads the rest of the standard `OTEL_*` variables itself
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._PROTOCOL`, `..._HEADERS`, `OTEL_TRACES_SAMPLER`,
 * `OTEL_BSP_*`, `OTEL_RESOURCE_ATTRIBUTES`). No auto-instrumentation: the service's own spans
 * (platform/tracing.ts) are the trace. `spanProcessors` replace the exporter (tests).
 */
export function startTracing(settings: TracingSettings, options: { spanProcessors?: SpanProcessor[] } = {}): Tracing | undefined {
  if (settings.exporter === 'none' && !options.spanProcessors) return undefined;
  const sdk = new NodeSDK({
    serviceName: settings.serviceName,
    instrumentations: [],
    // Metrics and logs have their own paths (prom-client, pino): traces only.
    metricReaders: [],
    logRecordProcessors: [],
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
