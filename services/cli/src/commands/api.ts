import { createReadStream, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { Command } from 'commander';
import type { Operation } from '../../../contract';
import { OPERATIONS, ROUTES } from '../../../sdk/src/index';
import { usageError } from '../cli-error';
import { connect, type ConnectionOptions } from '../connection';
import { interruptSignal } from '../interrupt';
import { printJson } from '../output';
import { fieldOptions, inputOf } from '../schema-options';

type Call = (input: unknown, options: Record<string, unknown>) => Promise<unknown>;

interface ApiOptions extends ConnectionOptions {
  data?: string;
  bodyFile?: string;
  [field: string]: unknown;
}

/**
 * `svc api <name>`: every operation and route of the contract, one subcommand each, made by one
 * loop over the two registries: its options are its input's fields (from the schema, with the
 * schema's descriptions), its answer is printed as JSON. `--data` gives the whole input as JSON
 * (fields given as options override it); a route whose body is a file takes `--body-file`. A
 * streaming entry follows its run to the end and prints its declared output.
 */
export function apiCommand(withConnection: (command: Command) => Command): Command {
  const api = new Command('api').description('call any operation or route of the contract by name and print its JSON answer (svc api <name> --help)');
  const registries: [Readonly<Record<string, Operation>>, 'ops' | 'routes'][] = [
    [OPERATIONS, 'ops'],
    [ROUTES, 'routes'],
  ];
  for (const [registry, group] of registries) {
    for (const [name, op] of Object.entries(registry)) {
      const fields = fieldOptions(op.input);
      const command = withConnection(new Command(name).description(`${op.summary} (${op.http.method} ${op.http.path}${op.scope ? `, scope ${op.scope}` : ''})`));
      for (const { option } of fields) command.addOption(option);
      command.option('--data <json>', 'the whole input as a JSON object (options above override its fields)');
      if (op.http.body === 'bytes') command.option('--body-file <path>', 'the file to send as the body');
      command.action(async (options: ApiOptions) => {
        const { client } = connect(options);
        const input = { ...dataOf(options.data), ...inputOf(fields, options) };
        const call = (client[group] as unknown as Record<string, Call>)[name] as Call;
        const callOptions: Record<string, unknown> = { signal: interruptSignal() };
        if (op.http.body === 'bytes') Object.assign(callOptions, bodyOf(options.bodyFile));
        printJson(await call(input, callOptions));
      });
      api.addCommand(command);
    }
  }
  return api;
}

function dataOf(data: string | undefined): Record<string, unknown> {
  if (data === undefined) return {};
  try {
    const parsed: unknown = JSON.parse(data);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // said below
  }
  throw usageError('--data takes a JSON object, e.g. --data \'{"id":"math-add"}\'');
}

function bodyOf(path: string | undefined): { body: ReadableStream<Uint8Array> } {
  if (path === undefined) throw usageError('this route sends a file: give it with --body-file <path>');
  if (!statSync(path, { throwIfNoEntry: false })?.isFile()) throw usageError(`--body-file ${path}: no such file`);
  return { body: Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array> };
}
