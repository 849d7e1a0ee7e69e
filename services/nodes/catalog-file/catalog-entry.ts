/**
 * One model offered as a node by a catalog file entry (docs/providers.md, Adding a model by
 * catalog entry). Plain JSON: it is stored with a run and a node is rebuilt from it elsewhere.
 */
export type CatalogEntry = MediaCatalogEntry | ChatCatalogEntry;

/** The adapters an entry may name. */
export const MEDIA_PROVIDERS = ['fal', 'replicate', 'openai-images', 'openai-speech', 'openai-transcribe', 'openai-embeddings'] as const;
export const CHAT_PROVIDERS = ['openai-chat', 'anthropic'] as const;
export type MediaProvider = (typeof MEDIA_PROVIDERS)[number];
export type ChatProvider = (typeof CHAT_PROVIDERS)[number];

/** The value types an input port of an entry may have. */
export const INPUT_TYPES = ['TEXT', 'INT', 'FLOAT', 'BOOLEAN', 'STRUCTURED', 'IMAGE', 'AUDIO', 'VIDEO'] as const;
/** The value types an output port may have: media are re-hosted, the rest copied from the answer. */
export const OUTPUT_TYPES = ['IMAGE', 'VIDEO', 'AUDIO', 'TEXT', 'STRUCTURED', 'EMBEDDING', 'INT', 'FLOAT', 'BOOLEAN'] as const;

interface EntryCommon {
  /** The node id; unique among every node of the deployment. */
  id: string;
  title: string;
  description: string;
  category: string;
  /** Example input values (value ports only), shown in `nodes.get`, the palette and `svc nodes`. */
  example?: Record<string, unknown>;
  /** The model (fal app id, Replicate `owner/name[:version]`, chat model name). */
  model: string;
  /** Where the price comes from and when it was read; documentation only. */
  priceSource?: string;
  price: {
    /** Micro-USD before the call, the worst case: over the inputs (after defaults). */
    estimate: string;
    /** Micro-USD after the call: over the inputs and what the answer measured. */
    actual: string;
  };
}

export interface InputPortEntry {
  type: (typeof INPUT_TYPES)[number];
  optional?: boolean;
  array?: boolean;
  default?: unknown;
  options?: unknown[];
  min?: number;
  max?: number;
  maxLength?: number;
}

export interface OutputPortEntry {
  type: (typeof OUTPUT_TYPES)[number];
  /** Where the value is in the answer (fal: its result JSON; Replicate: the prediction's `output`), a path such as `images[0].url`. */
  from: string;
  /** With `array`: the path of each item's value within the list at `from`, e.g. `url`. */
  item?: string;
  array?: boolean;
  /** A TEXT found as a list of strings (a Replicate LLM's tokens) is joined with this. */
  join?: string;
  /** An answer without it is no failure (the port is left out). */
  optional?: boolean;
}

export interface MediaCatalogEntry extends EntryCommon {
  provider: MediaProvider;
  inputs: Record<string, InputPortEntry>;
  /**
   * How the inputs become the provider's input object: each given input goes under its own
   * name unless `fields` names another for it (provider field → input port); `fixed` adds
   * constant fields. Media inputs are sent as data: URIs.
   */
  request?: { fields?: Record<string, string>; fixed?: Record<string, unknown> };
  outputs: Record<string, OutputPortEntry>;
  /** OpenAI-compatible entries: the API root when it is not OPENAI_BASE_URL, and the variable holding its key. */
  baseUrl?: string;
  apiKeyEnv?: string;
}

export interface ChatCatalogEntry extends EntryCommon {
  provider: ChatProvider;
  /** The API root when it is not the configured one (OpenRouter, Groq, a vLLM server); openai-chat only. */
  baseUrl?: string;
  /** The environment variable holding the key for `baseUrl`; default the provider's (OPENAI_API_KEY, ANTHROPIC_API_KEY). */
  apiKeyEnv?: string;
  /** Takes an optional IMAGE input sent with the prompt. */
  vision?: boolean;
  /** Upper bound of the maxTokens port. */
  maxOutputTokens?: number;
  /** Most characters of the prompt. */
  maxPromptLength?: number;
}

const portName = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' };
const common = {
  id: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{1,63}$' },
  title: { type: 'string', minLength: 1, maxLength: 120 },
  description: { type: 'string', minLength: 1, maxLength: 2000 },
  category: { type: 'string', minLength: 1, maxLength: 40 },
  example: { type: 'object' },
  model: { type: 'string', minLength: 1, maxLength: 300 },
  priceSource: { type: 'string' },
  price: {
    type: 'object',
    additionalProperties: false,
    required: ['estimate', 'actual'],
    properties: { estimate: { type: 'string', minLength: 1, maxLength: 1000 }, actual: { type: 'string', minLength: 1, maxLength: 1000 } },
  },
};

/** The JSON Schema of one entry (draft-07, for ajv); what it cannot say is checked in read-catalog-file.ts. */
export const CATALOG_ENTRY_SCHEMA = {
  type: 'object',
  required: ['id', 'provider'],
  properties: { provider: { enum: [...MEDIA_PROVIDERS, ...CHAT_PROVIDERS] } },
  if: { properties: { provider: { enum: [...MEDIA_PROVIDERS] } } },
  then: {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'title', 'description', 'category', 'provider', 'model', 'inputs', 'outputs', 'price'],
    properties: {
      ...common,
      provider: { enum: [...MEDIA_PROVIDERS] },
      baseUrl: { type: 'string', pattern: '^https?://' },
      apiKeyEnv: { type: 'string', pattern: '^[A-Z_][A-Z0-9_]*$' },
      inputs: {
        type: 'object',
        propertyNames: portName,
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          required: ['type'],
          properties: {
            type: { enum: [...INPUT_TYPES] },
            optional: { type: 'boolean' },
            array: { type: 'boolean' },
            default: {},
            options: { type: 'array', minItems: 1 },
            min: { type: 'number' },
            max: { type: 'number' },
            maxLength: { type: 'integer', minimum: 1 },
          },
        },
      },
      request: {
        type: 'object',
        additionalProperties: false,
        properties: {
          fields: { type: 'object', additionalProperties: portName },
          fixed: { type: 'object' },
        },
      },
      outputs: {
        type: 'object',
        minProperties: 1,
        propertyNames: portName,
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'from'],
          properties: {
            type: { enum: [...OUTPUT_TYPES] },
            from: { type: 'string' },
            item: { type: 'string' },
            array: { type: 'boolean' },
            join: { type: 'string' },
            optional: { type: 'boolean' },
          },
        },
      },
    },
  },
  else: {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'title', 'description', 'category', 'provider', 'model', 'price'],
    properties: {
      ...common,
      provider: { enum: [...CHAT_PROVIDERS] },
      baseUrl: { type: 'string', pattern: '^https?://' },
      apiKeyEnv: { type: 'string', pattern: '^[A-Z_][A-Z0-9_]*$' },
      vision: { type: 'boolean' },
      maxOutputTokens: { type: 'integer', minimum: 1, maximum: 1_000_000 },
      maxPromptLength: { type: 'integer', minimum: 1 },
    },
  },
} as const;

/** The whole file: `nodes`, a list of entries, and optionally `limits`, providers' limits (checked by catalog-limits.ts). */
export const CATALOG_FILE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['nodes'],
  properties: { nodes: { type: 'array' }, limits: {} },
} as const;
