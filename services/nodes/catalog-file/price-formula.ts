import jsep from 'jsep';
import { ceilMicros, type Micros } from '../../engine';
import { estimateTokens } from '../providers/llm-pricing';

/**
 * A catalog entry's price formula: an arithmetic expression over named values, parsed by jsep
 * (a parser only) and evaluated here over a closed set of operators and functions, so a catalog
 * file can compute a price and nothing else (no property access, no calls but the listed ones).
 *
 * Values: numbers, strings (compared with == and !=, measured with len and tokens), booleans,
 * and null for an input that was not given (0 in arithmetic). The result is micro-USD, rounded
 * up to a whole one.
 */
export interface PriceFormula {
  readonly text: string;
  /** Every name the formula reads (functions excluded). */
  readonly variables: ReadonlySet<string>;
  evaluate(values: Readonly<Record<string, unknown>>): number;
}

type Value = number | string | boolean | null;

const FUNCTIONS: Record<string, { arity: [number, number]; apply(args: Value[]): Value }> = {
  min: { arity: [1, Infinity], apply: (args) => Math.min(...args.map(num)) },
  max: { arity: [1, Infinity], apply: (args) => Math.max(...args.map(num)) },
  ceil: { arity: [1, 1], apply: ([x]) => Math.ceil(num(x!)) },
  floor: { arity: [1, 1], apply: ([x]) => Math.floor(num(x!)) },
  round: { arity: [1, 1], apply: ([x]) => Math.round(num(x!)) },
  /** Characters of a text (0 for null). */
  len: { arity: [1, 1], apply: ([x]) => (x === null ? 0 : String(x).length) },
  /** The conservative token count of a text the LLM nodes reserve by (3 ASCII characters a token). */
  tokens: { arity: [1, 1], apply: ([x]) => (x === null ? 0 : estimateTokens([String(x)])) },
};

const BINARY = new Set(['+', '-', '*', '/', '%', '<', '<=', '>', '>=', '==', '!=', '&&', '||']);
const UNARY = new Set(['-', '+', '!']);

/** A formula that does not parse or uses what the language lacks; the message says what. */
export class FormulaError extends Error {}

function num(value: Value): number {
  if (value === null) return 0;
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  throw new FormulaError(`the text ${JSON.stringify(value.slice(0, 40))} is not a number (len(x) counts its characters)`);
}

function check(node: jsep.Expression, names: Set<string>): void {
  switch (node.type) {
    case 'Literal': {
      const { value } = node as jsep.Literal;
      if (typeof value !== 'number' && typeof value !== 'string' && typeof value !== 'boolean' && value !== null) throw new FormulaError(`unsupported literal ${(node as jsep.Literal).raw}`);
      return;
    }
    case 'Identifier':
      names.add((node as jsep.Identifier).name);
      return;
    case 'BinaryExpression': {
      const { operator, left, right } = node as jsep.BinaryExpression;
      if (!BINARY.has(operator)) throw new FormulaError(`unsupported operator "${operator}"`);
      check(left, names);
      check(right, names);
      return;
    }
    case 'UnaryExpression': {
      const { operator, argument } = node as jsep.UnaryExpression;
      if (!UNARY.has(operator)) throw new FormulaError(`unsupported operator "${operator}"`);
      check(argument, names);
      return;
    }
    case 'ConditionalExpression': {
      const { test, consequent, alternate } = node as jsep.ConditionalExpression;
      check(test, names);
      check(consequent, names);
      check(alternate, names);
      return;
    }
    case 'CallExpression': {
      const { callee, arguments: args } = node as jsep.CallExpression;
      const name = callee.type === 'Identifier' ? (callee as jsep.Identifier).name : undefined;
      const fn = name === undefined ? undefined : Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
      if (!fn) throw new FormulaError(`unknown function${name ? ` "${name}"` : ''}; use ${Object.keys(FUNCTIONS).join(', ')}`);
      if (args.length < fn.arity[0] || args.length > fn.arity[1]) throw new FormulaError(`${name}() takes ${fn.arity[0] === fn.arity[1] ? fn.arity[0] : `${fn.arity[0]} or more`} argument(s)`);
      for (const arg of args) check(arg, names);
      return;
    }
    default:
      throw new FormulaError(`unsupported expression (${node.type}); use numbers, names, + - * / %, comparisons, ?:, and ${Object.keys(FUNCTIONS).join(', ')}()`);
  }
}

function evaluate(node: jsep.Expression, values: Readonly<Record<string, unknown>>): Value {
  switch (node.type) {
    case 'Literal':
      return (node as jsep.Literal).value as Value;
    case 'Identifier': {
      const value = values[(node as jsep.Identifier).name];
      if (value === undefined || value === null) return null;
      if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
      // A list counts as its length; any other JSON as its text.
      return Array.isArray(value) ? value.length : JSON.stringify(value);
    }
    case 'UnaryExpression': {
      const { operator, argument } = node as jsep.UnaryExpression;
      const x = evaluate(argument, values);
      return operator === '!' ? !truthy(x) : operator === '-' ? -num(x) : num(x);
    }
    case 'ConditionalExpression': {
      const { test, consequent, alternate } = node as jsep.ConditionalExpression;
      return evaluate(truthy(evaluate(test, values)) ? consequent : alternate, values);
    }
    case 'CallExpression': {
      const { callee, arguments: args } = node as jsep.CallExpression;
      return FUNCTIONS[(callee as jsep.Identifier).name]!.apply(args.map((arg) => evaluate(arg, values)));
    }
    case 'BinaryExpression': {
      const { operator, left, right } = node as jsep.BinaryExpression;
      const a = evaluate(left, values);
      if (operator === '&&') return truthy(a) ? truthy(evaluate(right, values)) : false;
      if (operator === '||') return truthy(a) ? true : truthy(evaluate(right, values));
      const b = evaluate(right, values);
      if (operator === '==') return a === b;
      if (operator === '!=') return a !== b;
      const [x, y] = [num(a), num(b)];
      switch (operator) {
        case '+': return x + y;
        case '-': return x - y;
        case '*': return x * y;
        case '/': return x / y;
        case '%': return x % y;
        case '<': return x < y;
        case '<=': return x <= y;
        case '>': return x > y;
        default: return x >= y;
      }
    }
    default:
      throw new FormulaError(`unsupported expression (${node.type})`);
  }
}

const truthy = (value: Value): boolean => value !== null && value !== false && value !== 0 && value !== '';

/** Parses and checks a formula; throws `FormulaError` naming what is wrong. */
export function parsePriceFormula(text: string): PriceFormula {
  let tree: jsep.Expression;
  try {
    tree = jsep(text);
  } catch (err) {
    throw new FormulaError(`does not parse: ${(err as Error).message}`);
  }
  const names = new Set<string>();
  check(tree, names);
  return { text, variables: names, evaluate: (values) => num(evaluate(tree, values)) };
}

/** A formula's result as a price: whole micro-USD, rounded up; anything not a finite, non-negative number is a defect of the entry. */
export function formulaMicros(formula: PriceFormula, values: Readonly<Record<string, unknown>>, what: string): Micros {
  const result = formula.evaluate(values);
  if (!Number.isFinite(result) || result < 0) throw new FormulaError(`${what} "${formula.text}" gave ${result}, not a price in micro-USD`);
  return ceilMicros(result);
}
