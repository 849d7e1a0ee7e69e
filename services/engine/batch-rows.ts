import { parse as parseCsv } from 'csv-parse/sync';
import { ArtifactInputSchema, validate, type ArtifactInput } from '../contract';
import { isDataConnector } from './connector-values';
import { checkRunInputs } from './run-inputs';
import { checkStartValues } from './start-values';
import type { CheckedWorkflow } from './validate-workflow';
import type { WorkflowInterface } from './workflow-interface';

/** The formats of a rows file (docs/batches.md, Rows). */
export const ROWS_FILE_FORMATS = ['jsonl', 'csv'] as const;
export type RowsFileFormat = (typeof ROWS_FILE_FORMATS)[number];

/** One refused row: its number (1-based, as in the caller's file), the input at fault (null: the row as a whole) and why. */
export interface RowProblem {
  row: number;
  field: string | null;
  message: string;
}

export type ParsedRows = { ok: true; format: RowsFileFormat; rows: unknown[] } | { ok: false; message: string; problem?: RowProblem };

/**
 * The rows of a rows file: JSON Lines (one JSON object per line; blank lines skipped) or CSV (a
 * header line naming the workflow's inputs, then one row per line, RFC 4180 quoting). Without a
 * stated format, a file whose first non-blank character is `{` is JSON Lines, else CSV. At most
 * `maxRows`; a line that does not parse is refused by its row number.
 */
export function parseRowsFile(text: string, maxRows: number, format?: RowsFileFormat): ParsedRows {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const chosen = format ?? (body.trimStart().startsWith('{') ? 'jsonl' : 'csv');
  return chosen === 'jsonl' ? parseJsonLines(body, maxRows) : parseCsvRows(body, maxRows);
}

function parseJsonLines(text: string, maxRows: number): ParsedRows {
  const rows: unknown[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    if (rows.length === maxRows) return tooMany(maxRows);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      const row = rows.length + 1;
      const message = `line ${i + 1} is not JSON (${(err as Error).message}); a JSON Lines file has one JSON object per line`;
      return { ok: false, message: `row ${row}: ${message}`, problem: { row, field: null, message } };
    }
    rows.push(value);
  }
  return rows.length === 0 ? { ok: false, message: 'the rows file has no rows' } : { ok: true, format: 'jsonl', rows };
}

function parseCsvRows(text: string, maxRows: number): ParsedRows {
  let records: Record<string, string>[];
  try {
    // One past the limit is read, to tell "too many" from "exactly the limit".
    records = parseCsv(text, { columns: true, skip_empty_lines: true, bom: true, to: maxRows + 1, relax_column_count: false, trim: false }) as Record<string, string>[];
  } catch (err) {
    const message = (err as Error).message;
    return {
      ok: false,
      message: `the rows file is neither JSON Lines (one JSON object per line) nor CSV with a header line of input names: ${message}`,
    };
  }
  if (records.length > maxRows) return tooMany(maxRows);
  if (records.length === 0) return { ok: false, message: 'the rows file has no rows: a CSV file needs a header line of input names, then one line per row' };
  // An empty cell is an input not given: its default applies, or it is reported as required.
  const rows = records.map((record) => Object.fromEntries(Object.entries(record).filter(([, cell]) => cell !== '').map(([name, cell]) => [name, { csv: cell }])));
  return { ok: true, format: 'csv', rows };
}

function tooMany(maxRows: number): ParsedRows {
  return { ok: false, message: `a batch has at most ${maxRows.toLocaleString('en-US')} rows; split the file into batches of at most that many` };
}

/** A CSV cell before it is read by its input's type. */
interface CsvCell {
  csv: string;
}

function isCsvCell(value: unknown): value is CsvCell {
  return typeof value === 'object' && value !== null && Object.keys(value).length === 1 && typeof (value as CsvCell).csv === 'string';
}

const ARTIFACT_KEYS = new Set(['kind', 'value', 'ref', 'mimeType', 'metadata']);

/**
 * A row's value for one input as the artifact a run takes. An object with `value` or `ref` (and
 * only artifact fields) is an artifact as `runs.create` takes it; anything else is the input's
 * value: a string for a file input (IMAGE, AUDIO, VIDEO, FILE) is its URL (`ref`), any other value
 * is inline. A CSV cell is read by the input's type: numbers for INT and FLOAT, true/false for
 * BOOLEAN, JSON for STRUCTURED and EMBEDDING, text otherwise.
 */
function artifactOf(value: unknown, connector: string | undefined): unknown {
  if (isCsvCell(value)) return artifactOf(readCell(value.csv, connector), connector);
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length > 0 && keys.every((key) => ARTIFACT_KEYS.has(key)) && (keys.includes('value') || keys.includes('ref'))) return value;
  }
  if (connector !== undefined && isDataConnector(connector as never) && typeof value === 'string') return { ref: value };
  return { value };
}

function readCell(cell: string, connector: string | undefined): unknown {
  switch (connector) {
    case 'INT':
    case 'FLOAT': {
      const text = cell.trim();
      const number = Number(text);
      return text !== '' && Number.isFinite(number) ? number : cell;
    }
    case 'BOOLEAN': {
      const text = cell.trim().toLowerCase();
      return text === 'true' ? true : text === 'false' ? false : cell;
    }
    case 'STRUCTURED':
    case 'EMBEDDING':
      try {
        return JSON.parse(cell) as unknown;
      } catch {
        return cell;
      }
    default:
      return cell;
  }
}

export interface CheckedRows {
  /** The rows that pass, each with its number and its inputs as a run of it would be stored with (defaults filled). */
  good: { row: number; inputs: Record<string, ArtifactInput> }[];
  problems: RowProblem[];
}

/**
 * Checks every row as `runs.create` checks a run's inputs: each name a declared input, required
 * ones present, artifacts well formed, values of the input's type, and every value known at the
 * start against the ports it is wired to. A row's numbers start at 1.
 */
export function checkBatchRows(rows: readonly unknown[], iface: WorkflowInterface, workflow: CheckedWorkflow): CheckedRows {
  const connectors = new Map(iface.inputs.map((input) => [input.id, input.connector as string]));
  const good: CheckedRows['good'] = [];
  const problems: RowProblem[] = [];
  rows.forEach((raw, index) => {
    const row = index + 1;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      problems.push({ row, field: null, message: `a row is an object from input names to values; row ${row} is ${Array.isArray(raw) ? 'an array' : JSON.stringify(raw)}` });
      return;
    }
    const given: Record<string, ArtifactInput> = {};
    let shaped = true;
    for (const [name, value] of Object.entries(raw)) {
      const artifact = artifactOf(value, connectors.get(name));
      const checked = validate(ArtifactInputSchema, artifact);
      if (!checked.ok) {
        problems.push({ row, field: name, message: `input "${name}": ${checked.message}` });
        shaped = false;
        continue;
      }
      given[name] = checked.value;
    }
    if (!shaped) return;
    const inputs = checkRunInputs(iface, given);
    if (!inputs.ok) {
      inputs.problems.forEach((message, i) => problems.push({ row, field: inputs.fields[i] ?? null, message }));
      return;
    }
    const values = checkStartValues(workflow, inputs.inputs, given);
    if (values.length > 0) {
      for (const problem of values) problems.push({ row, field: null, message: `${problem.path}: ${problem.message}` });
      return;
    }
    good.push({ row, inputs: inputs.inputs });
  });
  return { good, problems };
}
