import { MCP_ROUTE_NAMES, OPERATIONS, OP_NAMES, ROUTES, SPEND_CAP_NOTE, validate } from '../../services/contract';
import { DEFAULT_CAP_MICROS, MAX_CAP_MICROS, MICROS_PER_USD } from '../../services/engine/money';

/** The text and example input each operation gives AI agents as an MCP tool (services/contract/ops/*.ts). */
describe("the operations' agent guides", () => {
  it('gives every operation a description and an example input that its own input schema accepts', () => {
    for (const name of OP_NAMES) {
      const guide = OPERATIONS[name].agent;
      expect({ name, described: (guide?.description.length ?? 0) > 80 }).toEqual({ name, described: true });
      const checked = validate(OPERATIONS[name].input, guide!.example);
      expect({ name, ok: checked.ok, problem: checked.ok ? undefined : checked.message }).toEqual({ name, ok: true, problem: undefined });
    }
  });

  it('gives the routes served as MCP tools a description and an example their input schema accepts', () => {
    for (const name of MCP_ROUTE_NAMES) {
      const guide = ROUTES[name].agent;
      expect({ name, described: (guide?.description.length ?? 0) > 80 }).toEqual({ name, described: true });
      const checked = validate(ROUTES[name].input, guide!.example);
      expect({ name, ok: checked.ok, problem: checked.ok ? undefined : checked.message }).toEqual({ name, ok: true, problem: undefined });
    }
  });

  it('tells the run tools what they cost, with the cap and ceiling the engine enforces', () => {
    const usd = (micros: number) => (micros / MICROS_PER_USD).toFixed(2);
    expect(SPEND_CAP_NOTE).toContain(`${usd(DEFAULT_CAP_MICROS)} USD when omitted`);
    expect(SPEND_CAP_NOTE).toContain(`at most ${usd(MAX_CAP_MICROS)} USD`);
    for (const name of OP_NAMES) {
      const op = OPERATIONS[name];
      expect({ name, saysCost: op.agent!.description.includes(SPEND_CAP_NOTE) }).toEqual({ name, saysCost: op.spendsMoney });
    }
  });
});
