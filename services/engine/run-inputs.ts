import type { ArtifactInput } from '../contract';
import { fetchableUrlProblem } from '../platform/address-policy';
import { artifactKindOf, checkLiteral, isDataConnector } from './connector-values';
import type { WorkflowInterface } from './workflow-interface';

export type RunInputsCheck = { ok: true; inputs: Record<string, ArtifactInput> } | { ok: false; problems: string[]; message: string; fields: string[] };


/**
 * Checks the `inputs` of a run against the workflow's interface: every name is a declared input,
 * every required input is present, each artifact's kind (optional) matches the input's connector,
 * inline values have the connector's type, and refs are http(s) URLs without credentials.
 * Defaults fill omitted optional inputs.
 */
export function checkRunInputs(iface: WorkflowInterface, given: Record<string, ArtifactInput>): RunInputsCheck {
  const problems: string[] = [];
  // The input each problem is about, beside it (a batch reports a bad row by row and field).
  const fields: string[] = [];
  const report = (field: string, message: string): void => {
    problems.push(message);
    fields.push(field);
  };
  const declared = new Map(iface.inputs.map((i) => [i.id, i]));
  for (const name of Object.keys(given)) {
    if (!declared.has(name)) {
      const names = iface.inputs.map((i) => i.id);
      report(name, `input "${name}" is not an input of this workflow; its inputs are: ${names.join(', ') || 'none'}`);
    }
  }
  const resolved: Record<string, ArtifactInput> = {};
  for (const input of iface.inputs) {
    // Own keys only: an input named "constructor" is not Object's constructor.
    const artifact = Object.hasOwn(given, input.id) ? given[input.id] : undefined;
    const kind = artifactKindOf(input.connector)!;
    if (!artifact) {
      if (input.required) report(input.id, `input "${input.id}" (${input.connector}) is required`);
      // A data input's default is itself an artifact (a recipe asset); a value input's is its value.
      else resolved[input.id] = isDataConnector(input.connector) ? { ...(input.default as ArtifactInput), kind } : { kind, value: input.default };
      continue;
    }
    if (artifact.kind !== undefined && artifact.kind !== kind) {
      report(input.id, `input "${input.id}" takes ${input.connector}, so its kind must be "${kind}", got "${artifact.kind}"`);
      continue;
    }
    if ('value' in artifact && isDataConnector(input.connector)) {
      report(input.id, `input "${input.id}" (${input.connector}) takes a "ref" to the file, not an inline "value"`);
      continue;
    }
    if ('value' in artifact) {
      const problem = checkLiteral({ id: input.connector, isOptional: false, isArray: false }, artifact.value);
      if (problem) {
        report(input.id, `input "${input.id}" value ${problem}`);
        continue;
      }
    }
    if ('ref' in artifact && !isDataConnector(input.connector)) {
      report(input.id, `input "${input.id}" (${input.connector}) takes an inline "value", not a "ref"`);
      continue;
    }
    // Cheap, without DNS: the address rules apply when the file is fetched (then `step.failed`).
    const refProblem = 'ref' in artifact && typeof artifact.ref === 'string' ? fetchableUrlProblem(artifact.ref) : null;
    if (refProblem) {
      report(input.id, `input "${input.id}" ref ${refProblem}`);
      continue;
    }
    resolved[input.id] = { ...artifact, kind };
  }
  if (problems.length > 0) return { ok: false, problems, message: problems.join('; '), fields };
  return { ok: true, inputs: resolved };
}
