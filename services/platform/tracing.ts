import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

/**
 * Tracing with OpenTelemetry. The code uses only `@opentelemetry/api`, which does nothing until a
 * process registers an SDK (`startTracing` in tracing-sdk.ts, called by the composition root when
 * `OTEL_TRACES_EXPORTER` asks for it): off by default, and free when off.
 *
 * A run is one trace: the API's call span (`runs.create`), the jobs it enqueues carrying its
 * context (W3C `traceparent` in the job data), each job's `step.execute` span in a worker, each
 * node's `node.execute` span under it, and each provider call's `provider.request` span under that.
 * Span attributes name the run and node (`svc.run_id`, `svc.node_id`); they are not metric labels.
 */

const tracer = trace.getTracer('svc');

/** Attribute names of our spans. */
export const SPAN_ATTRIBUTES = {
  runId: 'svc.run_id',
  nodeId: 'svc.node_id',
  node: 'svc.node',
  attempt: 'svc.attempt',
  operation: 'svc.operation',
  outcome: 'svc.outcome',
  provider: 'svc.provider',
} as const;

export { SpanKind };

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent, when it is not the active context (a job's carried context). */
  parent?: Context;
}

/**
 * Runs `fn` in a new active span: ended when `fn` settles, its status an error when `fn`
 * rejects (the rejection passes through unchanged).
 */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  return tracer.startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err instanceof Error ? err : new Error(String(err)));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Sets attributes on the active span, if there is one (a no-op when tracing is off). */
export function annotateSpan(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes);
}

/** The active context in W3C form (`traceparent`, `tracestate`), to carry in a job; undefined when there is none. */
export function carriedContext(): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}

/** The context a job carried (or the root context when it carried none). */
export function contextFrom(carrier: Record<string, string> | undefined): Context {
  return carrier ? propagation.extract(context.active(), carrier) : context.active();
}
