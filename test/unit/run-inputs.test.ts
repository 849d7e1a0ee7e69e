import type { NodeSpec, Workflow } from '../../services/contract';
import { checkRunInputs, deriveInterface, validateWorkflow } from '../../services/engine';
import { createCatalog } from '../../services/nodes';

const workflow: Workflow = {
  version: 2,
  nodes: [
    { id: 'prompt', uses: 'input', outputType: 'TEXT' },
    { id: 'steps', uses: 'input', outputType: 'INT', inputs: { default: 20 } },
    { id: 'photo', uses: 'input', outputType: 'IMAGE', inputs: { default: { kind: 'image', ref: 'https://assets.example/cat.png' } } },
    { id: 'o1', uses: 'output', inputs: { value: '${prompt.value}' } },
    { id: 'o2', uses: 'output', inputs: { value: '${steps.value}' } },
    { id: 'o3', uses: 'output', inputs: { value: '${photo.value}' } },
  ],
};
const checked = validateWorkflow(workflow, createCatalog([] as NodeSpec[]));
if (!checked.ok) throw new Error(checked.message);
const iface = deriveInterface(checked.workflow);

describe('run inputs against the workflow interface', () => {
  it('accepts declared inputs, fills kinds and defaults', () => {
    expect(checkRunInputs(iface, { prompt: { value: 'a cat' } })).toEqual({
      ok: true,
      inputs: {
        prompt: { kind: 'text', value: 'a cat' },
        steps: { kind: 'int', value: 20 },
        photo: { kind: 'image', ref: 'https://assets.example/cat.png' },
      },
    });
    expect(checkRunInputs(iface, { prompt: { kind: 'text', value: 'x' }, steps: { value: 5 }, photo: { ref: 'https://x.example/p.jpg', mimeType: 'image/jpeg' } })).toMatchObject({
      ok: true,
      inputs: { photo: { kind: 'image', ref: 'https://x.example/p.jpg', mimeType: 'image/jpeg' } },
    });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['an unknown input name', { prompt: { value: 'x' }, negative: { value: 'y' } }, 'input "negative" is not an input of this workflow; its inputs are: prompt, steps, photo'],
    ['a missing required input', {}, 'input "prompt" (TEXT) is required'],
    ['a kind that does not match the connector', { prompt: { kind: 'image', ref: 'https://x.example/a.png' } }, 'input "prompt" takes TEXT, so its kind must be "text", got "image"'],
    ['a value of the wrong type', { prompt: { value: 'x' }, steps: { value: 2.5 } }, 'input "steps" value must be an INT'],
    ['a ref on a value input', { prompt: { ref: 'https://x.example/prompt.txt' } }, 'input "prompt" (TEXT) takes an inline "value", not a "ref"'],
    ['an inline value on a file input', { prompt: { value: 'x' }, photo: { value: 'base64...' } }, 'input "photo" (IMAGE) takes a "ref" to the file'],
    ['a ref that is not http(s)', { prompt: { value: 'x' }, photo: { ref: 'file:///etc/passwd' } }, 'input "photo" ref uses "file"; the service fetches only http and https URLs'],
    ['a ref with credentials', { prompt: { value: 'x' }, photo: { ref: 'https://user:pw@x.example/p.png' } }, 'input "photo" ref carries a user name or password'],
  ])('rejects %s', (_name, given, expected) => {
    const result = checkRunInputs(iface, given as never);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toContain(expected);
  });
});
