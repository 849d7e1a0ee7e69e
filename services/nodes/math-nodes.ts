import { defineNode, type NodeDefinition } from './node-definition';
import { invalidInput, type NodeOutputs } from './node-inputs';
import { flatPricing } from './pricing';
import { connector, ports } from './spec-builders';

/** Significant digits kept in non-integer results: enough for any double, short of binary noise. */
const SIGNIFICANT_DIGITS = 15;

const RESULTS_NOTE =
  'Results that are not whole numbers are rounded to 15 significant digits, so decimal inputs give decimal answers ' +
  '(0.1 + 0.2 = 0.3); whole results are exact.';

/**
 * Makes a result presentable and safe to pass on: fails on overflow (JSON has no Infinity),
 * drops binary noise from decimals, turns -0 into 0 (which JSON would write as 0 anyway).
 */
function tidy(node: string, value: number): number {
  if (!Number.isFinite(value)) throw invalidInput(node, 'b', `makes the result overflow (${value}); use smaller numbers`);
  if (Number.isInteger(value)) return value + 0;
  return Number(value.toPrecision(SIGNIFICANT_DIGITS)) + 0;
}

function binary(id: string, title: string, summary: string, op: (a: number, b: number) => number): NodeDefinition {
  return defineNode({
    spec: {
      id,
      kind: 'model',
      title,
      category: 'math',
      description: `${summary} ${RESULTS_NOTE}`,
      inputs: ports({ a: connector('FLOAT'), b: connector('FLOAT') }),
      outputs: ports({ result: connector('FLOAT') }),
    },
    ...flatPricing(1),
    async execute(inputs): Promise<NodeOutputs> {
      return { result: tidy(id, op(inputs.a as number, inputs.b as number)) };
    },
  });
}

const mathAdd = binary('math-add', 'Add', 'Adds two numbers: a + b.', (a, b) => a + b);
const mathSubtract = binary('math-subtract', 'Subtract', 'Subtracts b from a: a - b.', (a, b) => a - b);
const mathMultiply = binary('math-multiply', 'Multiply', 'Multiplies two numbers: a × b.', (a, b) => a * b);
const mathDivide = binary('math-divide', 'Divide', 'Divides a by b: a ÷ b. Dividing by 0 fails the node.', (a, b) => {
  if (b === 0) throw invalidInput('math-divide', 'b', 'is 0; division by zero has no result');
  return a / b;
});

const ROUND_MODES = ['nearest', 'floor', 'ceil', 'trunc'] as const;
type RoundMode = (typeof ROUND_MODES)[number];

function roundWhole(mode: RoundMode, value: number): number {
  switch (mode) {
    case 'nearest':
      // Halves away from zero (-2.5 → -3), as people round; Math.round alone sends -2.5 to -2.
      return Math.sign(value) * Math.round(Math.abs(value));
    case 'floor':
      return Math.floor(value);
    case 'ceil':
      return Math.ceil(value);
    case 'trunc':
      return Math.trunc(value);
  }
}

/**
 * Moves the decimal point through the number's decimal text, not by multiplying: 1.005 × 100
 * is 100.49999999999999 in binary, but "1.005e2" parses as 100.5, so 1.005 rounds to 1.01.
 */
function shiftDecimal(value: number, places: number): number {
  const [mantissa, exponent = '0'] = String(value).split('e');
  return Number(`${mantissa}e${Number(exponent) + places}`);
}

const mathRound = defineNode({
  spec: {
    id: 'math-round',
    kind: 'model',
    title: 'Round',
    category: 'math',
    description:
      'Rounds "value" to "decimals" places (0 to 10) by "mode": nearest (halves away from zero), floor, ceil or trunc. ' +
      '"result" is the rounded FLOAT; "integer" is the value rounded to a whole number the same way (ignoring ' +
      '"decimals"), for INT ports such as image sizes. Values beyond ±9007199254740991 fail the node.',
    inputs: ports({
      value: connector('FLOAT'),
      decimals: connector('INT', { defaultValue: 0, minValue: 0, maxValue: 10 }),
      mode: connector('TEXT', { defaultValue: 'nearest', optionValues: [...ROUND_MODES] }),
    }),
    outputs: ports({ result: connector('FLOAT'), integer: connector('INT') }),
  },
  ...flatPricing(1),
  async execute(inputs) {
    const value = inputs.value as number;
    const mode = inputs.mode as RoundMode;
    const decimals = inputs.decimals as number;
    const integer = roundWhole(mode, value) + 0;
    if (!Number.isSafeInteger(integer)) throw invalidInput('math-round', 'value', `is too large to round to an INT: ${value}`);
    const result = decimals === 0 ? integer : shiftDecimal(roundWhole(mode, shiftDecimal(value, decimals)), -decimals) + 0;
    return { result, integer };
  },
});

const mathClamp = defineNode({
  spec: {
    id: 'math-clamp',
    kind: 'model',
    title: 'Clamp',
    category: 'math',
    description: 'Limits "value" to the range from "min" to "max" (inclusive); "min" above "max" fails the node.',
    inputs: ports({ value: connector('FLOAT'), min: connector('FLOAT'), max: connector('FLOAT') }),
    outputs: ports({ result: connector('FLOAT') }),
  },
  ...flatPricing(1),
  async execute(inputs) {
    const value = inputs.value as number;
    const min = inputs.min as number;
    const max = inputs.max as number;
    if (min > max) throw invalidInput('math-clamp', 'min', `(${min}) is greater than "max" (${max})`);
    return { result: Math.min(max, Math.max(min, value)) + 0 };
  },
});

/** The math family, in palette order. */
export const MATH_NODES: readonly NodeDefinition[] = [mathAdd, mathSubtract, mathMultiply, mathDivide, mathRound, mathClamp];
