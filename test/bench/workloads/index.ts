import type { Workload } from '../support/context';
import { b1 } from './b1-one-node';
import { b2 } from './b2-chains';
import { b3 } from './b3-fan-out';
import { b4 } from './b4-sustained';
import { b5 } from './b5-organizations';
import { b6 } from './b6-streams';
import { b7 } from './b7-admission';
import { b8 } from './b8-worker-scaling';
import { b9 } from './b9-instrumentation';
import { b10 } from './b10-fairness';
import { b14 } from './b14-batches';

/** The suite's workloads, in the order they run and print. */
export const WORKLOADS: readonly Workload[] = [b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b14];
