import { build, type Histogram } from 'hdr-histogram-js';

/**
 * Latencies recorded in an HdrHistogram at microsecond resolution (3 significant digits, up to an
 * hour), read back in milliseconds: the percentiles every bench row prints.
 */
export class Latency {
  private readonly histogram: Histogram = build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3, useWebAssembly: false });

  /** Records one sample, in milliseconds. */
  record(ms: number): void {
    this.histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  get count(): number {
    return this.histogram.totalCount;
  }

  /** The `p`th percentile (0–100) in milliseconds; NaN when empty. */
  percentile(p: number): number {
    return this.count === 0 ? NaN : this.histogram.getValueAtPercentile(p) / 1000;
  }

  get max(): number {
    return this.count === 0 ? NaN : this.histogram.maxValue / 1000;
  }

  /** `p50 1.23 ms  p99 4.56 ms  max 7.89 ms  (n=1000)` */
  summary(): string {
    return `p50 ${fixed(this.percentile(50))} ms  p99 ${fixed(this.percentile(99))} ms  max ${fixed(this.max)} ms  (n=${this.count})`;
  }
}

/** A number with `digits` decimals, or `-` when it is not finite. */
export const fixed = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : '-');
