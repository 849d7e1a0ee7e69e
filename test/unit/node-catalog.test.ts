import type { NodeSpec } from '../../services/contract';
import { createCatalog, searchNodes } from '../../services/nodes';

function spec(id: string, title: string, category: string, description: string): NodeSpec {
  return { id, kind: 'model', title, category, description, inputs: {}, outputs: {} };
}

const catalog = createCatalog([
  spec('image-resize', 'Resize image', 'image', 'Scales an image to a width and height'),
  spec('image-crop', 'Crop image', 'image', 'Cuts a rectangle out of an image'),
  spec('text-template', 'Text template', 'text', 'Fills {{name}} placeholders'),
  spec('openai/chat', 'Chat completion', 'llm', 'Talks to an OpenAI-compatible RESIZE-free model'),
]);

describe('node catalog search', () => {
  it('matches q case-insensitively against id, title and description', () => {
    expect(searchNodes(catalog, { q: 'RESIZE' }).map((s) => s.id)).toEqual(['image-resize', 'openai/chat']);
    expect(searchNodes(catalog, { q: 'placeholders' }).map((s) => s.id)).toEqual(['text-template']);
    expect(searchNodes(catalog, { q: 'openai/' }).map((s) => s.id)).toEqual(['openai/chat']);
  });

  it('filters by exact category and cuts at limit, keeping catalog order', () => {
    expect(searchNodes(catalog, { category: 'image' }).map((s) => s.id)).toEqual(['image-resize', 'image-crop']);
    expect(searchNodes(catalog, { category: 'imag' })).toEqual([]);
    expect(searchNodes(catalog, { limit: 3 }).map((s) => s.id)).toEqual(['image-resize', 'image-crop', 'text-template']);
    expect(searchNodes(catalog, { q: 'image', category: 'image', limit: 1 }).map((s) => s.id)).toEqual(['image-resize']);
  });

  it('returns everything for an empty query and finds by id', () => {
    expect(searchNodes(catalog, { q: '  ' })).toHaveLength(4);
    expect(catalog.get('openai/chat')?.title).toBe('Chat completion');
    expect(catalog.get('nope')).toBeUndefined();
  });

  it('refuses duplicate node ids', () => {
    expect(() => createCatalog([spec('a', 'A', 'x', ''), spec('a', 'B', 'x', '')])).toThrow('duplicate');
  });
});
