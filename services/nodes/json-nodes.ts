import { MAX_TEXT_LENGTH } from './limits';
import { defineNode, type NodeDefinition } from './node-definition';
import { invalidInput } from './node-inputs';
import { lookupJsonPath, parseJsonPath } from './json-path';
import { flatPricing } from './pricing';
import { connector, ports } from './spec-builders';

const jsonExtract = defineNode({
  spec: {
    id: 'json-extract',
    kind: 'model',
    title: 'Extract from JSON',
    category: 'json',
    description:
      'Reads the value at "path" in STRUCTURED data: keys separated by dots, list indexes in brackets (a.b[0].c; [-1] is ' +
      'the last item; a["key.with.dots"] for unusual keys; an empty path is the whole value). A path that is not there ' +
      'fails the node, naming the path and where it stops, unless "fallback" is given, which is then returned.',
    inputs: ports({
      data: connector('STRUCTURED'),
      path: connector('TEXT'),
      fallback: connector('STRUCTURED', { isOptional: true }),
    }),
    outputs: ports({ value: connector('STRUCTURED') }),
  },
  ...flatPricing(1),
  async execute(inputs) {
    const path = inputs.path as string;
    const parsed = parseJsonPath(path);
    if (!parsed.ok) throw invalidInput('json-extract', 'path', `${JSON.stringify(path)} ${parsed.message}`);
    const found = lookupJsonPath(inputs.data, parsed.segments);
    if (found.found) return { value: found.value };
    if (inputs.fallback !== undefined) return { value: inputs.fallback };
    throw invalidInput('json-extract', 'path', `${JSON.stringify(path)} is not in the data: ${found.message}`);
  },
});

// A whole-text markdown code fence, as LLMs often wrap JSON: ```json ... ```
const CODE_FENCE = /^```[A-Za-z0-9_-]*[ \t]*\r?\n([\s\S]*?)\r?\n?```$/;

const jsonParse = defineNode({
  spec: {
    id: 'json-parse',
    kind: 'model',
    title: 'Parse JSON',
    category: 'json',
    description:
      'Parses TEXT as JSON into a STRUCTURED value. Surrounding white space and a markdown code fence around the whole ' +
      'text (```json ... ```, as language models often write) are ignored. Invalid JSON fails the node with the parser\'s reason.',
    inputs: ports({ text: connector('TEXT') }),
    outputs: ports({ value: connector('STRUCTURED') }),
  },
  ...flatPricing(2),
  async execute(inputs) {
    let text = (inputs.text as string).trim();
    const fenced = CODE_FENCE.exec(text);
    if (fenced) text = fenced[1]!.trim();
    try {
      return { value: JSON.parse(text) as unknown };
    } catch (err) {
      throw invalidInput('json-parse', 'text', `is not valid JSON: ${(err as Error).message}`);
    }
  },
});

const jsonStringify = defineNode({
  spec: {
    id: 'json-stringify',
    kind: 'model',
    title: 'JSON to text',
    category: 'json',
    description: 'Writes a STRUCTURED value as JSON TEXT, compact by default or indented by "indent" spaces (0 to 8).',
    inputs: ports({
      value: connector('STRUCTURED'),
      indent: connector('INT', { defaultValue: 0, minValue: 0, maxValue: 8 }),
    }),
    outputs: ports({ text: connector('TEXT') }),
  },
  ...flatPricing(1),
  async execute(inputs) {
    const indent = inputs.indent as number;
    const text = JSON.stringify(inputs.value, null, indent > 0 ? indent : undefined);
    if (text.length > MAX_TEXT_LENGTH) {
      throw invalidInput('json-stringify', 'value', `makes a text of ${text.length} characters; the limit is ${MAX_TEXT_LENGTH}`);
    }
    return { text };
  },
});

/** The JSON family, in palette order. */
export const JSON_NODES: readonly NodeDefinition[] = [jsonExtract, jsonParse, jsonStringify];
