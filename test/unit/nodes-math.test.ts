import { type NodeInputs } from '../../services/nodes';
import { nodeContext, platformNode } from '../support/node-harness';

async function result(id: string, inputs: NodeInputs): Promise<unknown> {
  const definition = platformNode(id);
  const outputs = await definition.execute(inputs, nodeContext());
  expect(definition.estimate(inputs)).toBe(1);
  expect(definition.price(inputs, outputs)).toBe(1);
  return outputs.result;
}

function rejects(id: string, inputs: NodeInputs, fragment: string): Promise<void> {
  return expect(platformNode(id).execute(inputs, nodeContext())).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringContaining(fragment) as unknown });
}

describe('arithmetic nodes', () => {
  it('add, subtract, multiply and divide', async () => {
    expect(await result('math-add', { a: 2, b: 3 })).toBe(5);
    expect(await result('math-subtract', { a: 2, b: 3.5 })).toBe(-1.5);
    expect(await result('math-multiply', { a: -4, b: 2.5 })).toBe(-10);
    expect(await result('math-divide', { a: 7, b: 2 })).toBe(3.5);
  });

  it('gives decimal answers for decimal inputs and exact whole results', async () => {
    expect(await result('math-add', { a: 0.1, b: 0.2 })).toBe(0.3);
    expect(await result('math-multiply', { a: 0.1, b: 3 })).toBe(0.3);
    expect(await result('math-subtract', { a: 0.3, b: 0.1 })).toBe(0.2);
    expect(await result('math-divide', { a: 1, b: 3 })).toBe(0.333333333333333);
    expect(await result('math-add', { a: 9007199254740990, b: 1 })).toBe(9007199254740991);
    expect(Object.is(await result('math-multiply', { a: 0, b: -1 }), 0)).toBe(true);
  });

  it('fails on division by zero and on overflow, naming the input', async () => {
    await rejects('math-divide', { a: 1, b: 0 }, 'node "math-divide": input "b" is 0; division by zero has no result');
    await rejects('math-multiply', { a: 1e308, b: 10 }, 'makes the result overflow');
  });

  it('rejects inputs that are not numbers, and missing ones', async () => {
    await rejects('math-add', { a: '2', b: 3 }, 'input "a" must be a FLOAT (a number), got "2"');
    await rejects('math-add', { a: 2 }, 'input "b" (FLOAT) is required');
  });
});

describe('math-round', () => {
  async function round(value: number, mode?: string, decimals?: number): Promise<Record<string, unknown>> {
    const inputs: NodeInputs = { value };
    if (mode !== undefined) inputs.mode = mode;
    if (decimals !== undefined) inputs.decimals = decimals;
    return platformNode('math-round').execute(inputs, nodeContext());
  }

  it('rounds halves away from zero by default, with an INT output too', async () => {
    expect(await round(2.5)).toEqual({ result: 3, integer: 3 });
    expect(await round(-2.5)).toEqual({ result: -3, integer: -3 });
    expect(await round(-0.4)).toEqual({ result: 0, integer: 0 });
    expect(Object.is((await round(-0.4)).integer, 0)).toBe(true);
  });

  it('rounds at decimal places on the decimal value, not its binary neighbour', async () => {
    expect(await round(1.005, 'nearest', 2)).toEqual({ result: 1.01, integer: 1 });
    expect(await round(3.14159, 'nearest', 3)).toEqual({ result: 3.142, integer: 3 });
    expect(await round(1e-7, 'nearest', 10)).toEqual({ result: 1e-7, integer: 0 });
  });

  it('floors, ceils and truncates', async () => {
    expect(await round(-1.25, 'floor', 1)).toEqual({ result: -1.3, integer: -2 });
    expect(await round(-1.25, 'ceil', 1)).toEqual({ result: -1.2, integer: -1 });
    expect(await round(-1.99, 'trunc')).toEqual({ result: -1, integer: -1 });
  });

  it('rejects unknown modes, out-of-range decimals and values too large for an INT', async () => {
    await rejects('math-round', { value: 1, mode: 'banker' }, 'input "mode" must be one of "nearest", "floor", "ceil", "trunc"');
    await rejects('math-round', { value: 1, decimals: 11 }, 'input "decimals" must be an INT between 0 and 10');
    await rejects('math-round', { value: 1e20 }, 'input "value" is too large to round to an INT');
  });
});

describe('math-clamp', () => {
  it('limits a value to the range', async () => {
    expect(await result('math-clamp', { value: 5, min: 0, max: 3 })).toBe(3);
    expect(await result('math-clamp', { value: -5, min: 0, max: 3 })).toBe(0);
    expect(await result('math-clamp', { value: 1.5, min: 0, max: 3 })).toBe(1.5);
  });

  it('fails when min is above max', async () => {
    await rejects('math-clamp', { value: 1, min: 5, max: 2 }, 'input "min" (5) is greater than "max" (2)');
  });
});

describe('math nodes and the abort signal', () => {
  it('reject with the abort reason when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('step cancelled'));
    await expect(platformNode('math-add').execute({ a: 1, b: 2 }, nodeContext(controller.signal))).rejects.toThrow('step cancelled');
  });
});
