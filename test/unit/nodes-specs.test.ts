import { NodeSpecSchema, validate, type Workflow } from '../../services/contract';
import { checkLiteral, validateWorkflow } from '../../services/engine';
import { createNodeCatalog, findNode, PLATFORM_NODES, searchNodes } from '../../services/nodes';

const FAMILIES = ['text', 'json', 'math', 'image'];

describe.each(PLATFORM_NODES.map((node) => [node.spec.id, node] as const))('platform node %s', (id, node) => {
  const { spec } = node;

  it('has a spec that validates against NodeSpecSchema and survives JSON', () => {
    const checked = validate(NodeSpecSchema, spec);
    expect(checked.ok ? 'ok' : checked.message).toBe('ok');
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
  });

  it('has a kebab-case id under its family prefix, matching its category', () => {
    expect(id).toMatch(/^[a-z]+(-[a-z]+)+$/);
    const family = id.split('-')[0]!;
    expect(FAMILIES).toContain(family);
    expect(spec.category).toBe(family);
    expect(spec.kind).toBe('model');
    expect(spec.title.length).toBeGreaterThan(0);
    expect(spec.description.length).toBeGreaterThan(20);
  });

  it('names every port after its key', () => {
    for (const map of [spec.inputs, spec.outputs]) {
      for (const [key, port] of Object.entries(map)) expect(port.name).toBe(key);
    }
    expect(Object.keys(spec.outputs).length).toBeGreaterThan(0);
  });

  it('has defaults that pass checkLiteral for their own connector, and option values of the connector type', () => {
    for (const port of Object.values(spec.inputs)) {
      const { connector } = port;
      if (connector.defaultValue !== undefined) {
        expect([port.name, checkLiteral(connector, connector.defaultValue)]).toEqual([port.name, null]);
        expect(connector.isOptional).toBe(true);
      }
      for (const option of connector.optionValues ?? []) {
        expect(checkLiteral({ id: connector.id, isOptional: false, isArray: false }, option)).toBeNull();
      }
      if (connector.minValue !== undefined && connector.maxValue !== undefined) expect(connector.minValue).toBeLessThanOrEqual(connector.maxValue);
    }
  });

  it('estimates a whole, positive number of micro-USD within the documented range', () => {
    const estimate = node.estimate({});
    expect(Number.isSafeInteger(estimate)).toBe(true);
    expect(estimate).toBeGreaterThanOrEqual(1);
    expect(estimate).toBeLessThanOrEqual(spec.category === 'image' ? 500 : 10);
  });
});

describe('the platform catalog', () => {
  const catalog = createNodeCatalog();

  it('lists every platform node once, in registry order, and finds each by id', () => {
    const ids = catalog.list().map((spec) => spec.id);
    expect(ids).toEqual(PLATFORM_NODES.map((node) => node.spec.id));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(findNode(id)?.spec).toBe(catalog.get(id));
  });

  it('holds the node families the palette promises', () => {
    expect(catalog.list().map((spec) => spec.id)).toEqual(
      expect.arrayContaining([
        'text-template', 'text-concat', 'text-split', 'text-regex-replace', 'json-extract', 'math-add', 'math-subtract',
        'math-multiply', 'math-divide', 'math-round', 'math-clamp', 'image-resize', 'image-crop', 'image-convert',
        'image-composite', 'image-metadata',
      ]),
    );
    expect(searchNodes(catalog, { category: 'image' }).map((spec) => spec.id)).toEqual([
      'image-resize', 'image-crop', 'image-convert', 'image-composite', 'image-metadata',
    ]);
    expect(searchNodes(catalog, { q: 'placeholders' }).map((spec) => spec.id)).toEqual(['text-template']);
  });

  it('serves workflow validation: omitted defaulted inputs pass, values outside optionValues fail before running', () => {
    const workflow = (fit: string): Workflow => ({
      version: 2,
      nodes: [
        { id: 'photo', uses: 'input', outputType: 'IMAGE' },
        { id: 'small', uses: 'image-resize', inputs: { image: '${photo.value}', width: 64, fit } },
        { id: 'size', uses: 'image-metadata', inputs: { image: '${small.image}' } },
        { id: 'area', uses: 'math-multiply', inputs: { a: '${size.width}', b: '${size.height}' } },
        { id: 'label', uses: 'text-template', inputs: { template: 'area {{a}}', values: { a: 1 } } },
        { id: 'out', uses: 'output', inputs: { value: '${label.text}' } },
        { id: 'px', uses: 'output', inputs: { value: '${area.result}' } },
      ],
    });
    const good = validateWorkflow(workflow('contain'), catalog);
    expect(good.ok ? 'ok' : good.message).toBe('ok');
    const bad = validateWorkflow(workflow('stretch'), catalog);
    expect(bad.ok).toBe(false);
    expect(bad.ok ? '' : bad.message).toContain('input "fit" must be one of "cover", "contain", "fill", "inside", "outside", got "stretch"');
  });
});
