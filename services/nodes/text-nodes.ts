import { MAX_SPLIT_PARTS, MAX_TEXT_LENGTH } from './limits';
import { defineNode, type NodeDefinition } from './node-definition';
import { invalidInput } from './node-inputs';
import { formatJsonPath, lookupJsonPath, parseJsonPath } from './json-path';
import { flatPricing } from './pricing';
import { REGEX_LIMITS, replaceWithTimeout } from './regex-sandbox';
import { connector, ports } from './spec-builders';

/** Fails when a result is too long, blaming the input that made it grow. */
function checkLength<T extends { length: number }>(node: string, port: string, text: T): T {
  if (text.length > MAX_TEXT_LENGTH) {
    throw invalidInput(node, port, `makes a result of ${text.length} characters; the limit is ${MAX_TEXT_LENGTH}`);
  }
  return text;
}

// No white space handling in the pattern: `\s*` around a lazy group backtracks quadratically.
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;
const MISSING_MODES = ['error', 'keep', 'empty'] as const;
type MissingMode = (typeof MISSING_MODES)[number];

function render(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** text-template: estimate is the worst case (an output at the length limit); price follows the real output. */
const TEMPLATE_ESTIMATE = 10;
const TEMPLATE_BASE = 2;
const TEMPLATE_CHARS_PER_MICRO = 125_000;

const textTemplate = defineNode({
  spec: {
    id: 'text-template',
    kind: 'model',
    title: 'Text template',
    category: 'text',
    description:
      'Fills {{name}} placeholders in a template from the STRUCTURED object "values". A placeholder may be a path such as ' +
      '{{user.name}} or {{items[0]}}. Strings are inserted as they are, other values as JSON. A placeholder whose path is ' +
      'not in "values" fails the node, naming it ("missing": "error", the default), is left as written ("keep"), or ' +
      'becomes empty text ("empty").',
    inputs: ports({
      template: connector('TEXT'),
      values: connector('STRUCTURED', { defaultValue: {} }),
      missing: connector('TEXT', { defaultValue: 'error', optionValues: [...MISSING_MODES] }),
    }),
    outputs: ports({ text: connector('TEXT') }),
    example: { template: 'Hello {{user.name}}, your order {{order}} has shipped.', values: { user: { name: 'Ada' }, order: 'A-1042' } },
  },
  estimate: () => TEMPLATE_ESTIMATE,
  price: (_inputs, outputs) => {
    const length = typeof outputs.text === 'string' ? outputs.text.length : MAX_TEXT_LENGTH;
    return TEMPLATE_BASE + Math.floor(length / TEMPLATE_CHARS_PER_MICRO);
  },
  async execute(inputs) {
    const template = inputs.template as string;
    const values = inputs.values;
    const missing = inputs.missing as MissingMode;
    if (values === null || typeof values !== 'object' || Array.isArray(values)) {
      throw invalidInput('text-template', 'values', 'must be an object whose keys name the placeholders, e.g. {"name": "Ada"}');
    }
    const absent = new Set<string>();
    // Counted while filling, so a template repeating a large value fails early instead of exhausting memory.
    let length = template.length;
    const text = template.replace(PLACEHOLDER, (whole, path: string) => {
      const parsed = parseJsonPath(path.trim());
      if (!parsed.ok || parsed.segments.length === 0) {
        throw invalidInput('text-template', 'template', `has a placeholder ${whole} that is not a path like {{name}} or {{a.b[0]}}`);
      }
      const found = lookupJsonPath(values, parsed.segments);
      if (!found.found) absent.add(formatJsonPath(parsed.segments));
      const filled = found.found ? render(found.value) : missing === 'keep' ? whole : '';
      length += filled.length - whole.length;
      if (length > MAX_TEXT_LENGTH) checkLength('text-template', 'template', { length });
      return filled;
    });
    if (absent.size > 0 && missing === 'error') {
      const names = [...absent].map((name) => `{{${name}}}`).join(', ');
      throw invalidInput('text-template', 'values', `has no value for ${names}; add ${absent.size === 1 ? 'it' : 'them'} to "values" or set "missing" to "keep" or "empty"`);
    }
    return { text: checkLength('text-template', 'template', text) };
  },
});

const textConcat = defineNode({
  spec: {
    id: 'text-concat',
    kind: 'model',
    title: 'Concatenate text',
    category: 'text',
    description: 'Joins a list of TEXT into one, with "separator" between items (none by default).',
    inputs: ports({
      texts: connector('TEXT', { isArray: true }),
      separator: connector('TEXT', { defaultValue: '' }),
    }),
    outputs: ports({ text: connector('TEXT') }),
  },
  ...flatPricing(1),
  async execute(inputs) {
    const texts = inputs.texts as string[];
    return { text: checkLength('text-concat', 'texts', texts.join(inputs.separator as string)) };
  },
});

const textSplit = defineNode({
  spec: {
    id: 'text-split',
    kind: 'model',
    title: 'Split text',
    category: 'text',
    description:
      'Splits TEXT at every occurrence of "separator" (plain text, a line break by default; empty splits into characters). ' +
      '"trim" removes white space around each part, "dropEmpty" leaves out empty parts. At most 10,000 parts.',
    inputs: ports({
      text: connector('TEXT'),
      separator: connector('TEXT', { defaultValue: '\n' }),
      trim: connector('BOOLEAN', { defaultValue: false }),
      dropEmpty: connector('BOOLEAN', { defaultValue: false }),
    }),
    outputs: ports({
      parts: connector('TEXT', { isArray: true }),
      count: connector('INT'),
    }),
  },
  ...flatPricing(1),
  async execute(inputs) {
    const text = inputs.text as string;
    const separator = inputs.separator as string;
    // Array.from splits by code point, so an emoji stays one part.
    let parts = separator === '' ? Array.from(text) : text.split(separator);
    if (inputs.trim === true) parts = parts.map((part) => part.trim());
    if (inputs.dropEmpty === true) parts = parts.filter((part) => part !== '');
    if (parts.length > MAX_SPLIT_PARTS) {
      throw invalidInput('text-split', 'text', `splits into ${parts.length} parts; the limit is ${MAX_SPLIT_PARTS}`);
    }
    return { parts, count: parts.length };
  },
});

const FLAGS = /^[gimsu]*$/;

function checkFlags(flags: string): void {
  if (!FLAGS.test(flags) || new Set(flags).size !== flags.length) {
    throw invalidInput('text-regex-replace', 'flags', `must be distinct letters among g, i, m, s, u (e.g. "gi"), got ${JSON.stringify(flags)}`);
  }
}

function checkMax(port: string, value: string, max: number): void {
  if (value.length > max) throw invalidInput('text-regex-replace', port, `is ${value.length} characters long; the limit is ${max}`);
}

const textRegexReplace = defineNode({
  spec: {
    id: 'text-regex-replace',
    kind: 'model',
    title: 'Regex replace',
    category: 'text',
    description:
      'Replaces matches of a JavaScript regular expression "pattern" in TEXT with "replacement", which may use $1, $<name> ' +
      'and $& for groups and the match. "flags" are letters among g, i, m, s, u ("g", every match, by default). Limits: ' +
      'text up to 100,000 characters, pattern up to 500, replacement up to 1,000, and 250 ms of matching.',
    inputs: ports({
      text: connector('TEXT'),
      pattern: connector('TEXT'),
      replacement: connector('TEXT', { defaultValue: '' }),
      flags: connector('TEXT', { defaultValue: 'g' }),
    }),
    outputs: ports({ text: connector('TEXT') }),
  },
  ...flatPricing(5),
  async execute(inputs) {
    const text = inputs.text as string;
    const pattern = inputs.pattern as string;
    const replacement = inputs.replacement as string;
    const flags = inputs.flags as string;
    checkMax('text', text, REGEX_LIMITS.maxTextLength);
    checkMax('pattern', pattern, REGEX_LIMITS.maxPatternLength);
    checkMax('replacement', replacement, REGEX_LIMITS.maxReplacementLength);
    checkFlags(flags);
    try {
      new RegExp(pattern, flags);
    } catch (err) {
      throw invalidInput('text-regex-replace', 'pattern', `is not a valid regular expression: ${(err as Error).message}`);
    }
    const outcome = replaceWithTimeout(text, pattern, flags, replacement);
    if (!outcome.ok) {
      throw outcome.failure === 'timeout'
        ? invalidInput('text-regex-replace', 'pattern', `took longer than ${REGEX_LIMITS.timeoutMs} ms to match; avoid nested repetition such as (a+)+`)
        : invalidInput('text-regex-replace', 'replacement', `makes a result longer than JavaScript strings allow`);
    }
    return { text: checkLength('text-regex-replace', 'replacement', outcome.text) };
  },
});

/** The text family, in palette order. */
export const TEXT_NODES: readonly NodeDefinition[] = [textTemplate, textConcat, textSplit, textRegexReplace];
