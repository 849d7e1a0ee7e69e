import { Type, type Static } from '@sinclair/typebox';

const usd = (description: string) => Type.Number({ minimum: 0, description });
const usdOrNull = (description: string) => Type.Union([usd(description), Type.Null()], { description });

/** One node of `POST /v1/runs/estimate`'s answer. */
export const NodeEstimateSchema = Type.Object({
  nodeId: Type.String(),
  uses: Type.String({ description: 'The node spec it runs' }),
  worstCaseUsd: usdOrNull("Its step's reservation: the pricing function's worst case on the inputs known now; null when that depends on values only the run produces (dependsOn)"),
  dependsOn: Type.Array(Type.String(), { description: 'The upstream outputs (node.port) its worst case depends on; empty when known now' }),
  expectedUsd: usdOrNull("What it is likely to cost: your organization's median for this node over its recent completed runs, at most the worst case; without history, the worst case"),
  expectedFrom: Type.Union([Type.Literal('history'), Type.Literal('worst_case'), Type.Null()]),
  samples: Type.Integer({ minimum: 0, description: 'Completed steps the median is taken over' }),
});

/** `POST /v1/runs/estimate`: what a run would cost, before running it (docs/runs.md, Cost estimates). */
export const RunEstimateSchema = Type.Object({
  nodes: Type.Array(NodeEstimateSchema),
  worstCaseUsd: usdOrNull("The sum of the nodes' worst cases; null when one is not known before running"),
  expectedUsd: usdOrNull("The sum of the nodes' expected costs; null when one is not known"),
  maxCostUsd: usd("The run's spend cap: maxCostUsd, or the default 0.50, at most the ceiling 1.00"),
  fitsCap: Type.Union([Type.Boolean(), Type.Null()], { description: 'Whether the worst case fits the cap; null when the worst case is not known (the run then stops at the cap if it gets there)' }),
  availableUsd: usd('What your organization may still spend: its balance less what its unfinished runs hold'),
  fitsBalance: Type.Boolean({ description: 'Whether the available balance covers what the run would hold: its worst case, at most its cap' }),
});
export type RunEstimateBody = Static<typeof RunEstimateSchema>;
