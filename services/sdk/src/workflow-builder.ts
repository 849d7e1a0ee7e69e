import { BUILTIN_CONNECTOR_IDS, type BuiltinConnectorId, type GraphNode, type Workflow } from '../../contract';
import { MOUNT_SEPARATOR } from '../../engine/mount-separator';
import { formatReference, NODE_ID_PATTERN, parseReference } from '../../engine/references';
import { validateOffline, validateOnline, type OnlineValidateOptions, type WorkflowValidation } from './workflow-validation';

export { type NodeSpecSource, type OnlineValidateOptions, type WorkflowValidation, type WorkflowValidationProblem } from './workflow-validation';

/**
 * A port of a node in a draft, to feed into another node's input. It stands for the workflow
 * format's reference string `${<nodeId>.<port>}`, which `toString()` and `toJSON()` return, and
 * belongs to the builder that made it: giving it to another builder throws.
 */
export interface PortReference {
  /** The id of the node whose port this is. */
  readonly nodeId: string;
  /** The port's name (`value` for input and const nodes). */
  readonly port: string;
  /** The reference string, `${<nodeId>.<port>}`. */
  toString(): string;
  /** The reference string, so a reference inside `JSON.stringify` becomes what the format expects. */
  toJSON(): string;
}

/** A platform node (or mounted workflow) added with `addNode`. */
export interface NodeHandle {
  /** The node's id in the workflow: generated from its `uses`, or the one given to `addNode`. */
  readonly id: string;
  /** What the node is: a platform node id, or a published workflow `<org-slug>/<workflow-slug>`. */
  readonly uses: string;
  /** A reference to one of the node's output ports; throws for a name no reference can carry. */
  port(name: string): PortReference;
  /**
   * The node's output ports as properties: `node.out.text` is `node.port('text')`. Any valid port
   * name gives a reference (whether the node has that port is for `validate()` to say); a key no
   * reference can carry (a symbol, `$$typeof`) reads as undefined, so inspecting the object is safe.
   */
  readonly out: Readonly<Record<string, PortReference>>;
}

/** A value for a node input: a literal JSON value, a {@link PortReference}, or a reference string `${<nodeId>.<port>}`. */
export type InputValue = unknown;

/** Options of `addInput`. */
export interface AddInputOptions {
  /** The value a run that leaves this input out gets; without one the input is required. A file input's default is an artifact. */
  default?: unknown;
  /** Display text (the web editor's); it changes nothing. */
  label?: string;
}

/** Options of `addNode`. */
export interface AddNodeOptions {
  /** The node's id, instead of one generated from `uses`. */
  id?: string;
  /** Display text (the web editor's); it changes nothing. */
  label?: string;
}

/** Options of `addConst` and `addOutput`. */
export interface LabelOptions {
  /** Display text (the web editor's); it changes nothing. */
  label?: string;
}

interface DraftNode {
  id: string;
  uses: string;
  outputType?: BuiltinConnectorId;
  label?: string;
  /** Literals (copied when given) and references; a Map, so an input named "__proto__" stays an input. */
  inputs: Map<string, unknown>;
}

/** Which builder made each reference and handle. */
const owners = new WeakMap<object, WorkflowBuilder>();

class Reference implements PortReference {
  constructor(
    readonly nodeId: string,
    readonly port: string,
  ) {}

  toString(): string {
    return formatReference(this);
  }

  toJSON(): string {
    return this.toString();
  }
}

/** Whether a value is a {@link PortReference} made by some workflow builder. */
export function isPortReference(value: unknown): value is PortReference {
  return value instanceof Reference;
}

function misuse(method: string, message: string): Error {
  return new Error(`${method}: ${message}`);
}

/** The engine's own rule for ids, as the server applies it to a workflow as written. */
function checkId(method: string, id: unknown, what: string): string {
  if (typeof id !== 'string' || !NODE_ID_PATTERN.test(id)) {
    throw misuse(method, `${what} ${JSON.stringify(id)} must start with a letter or "_" and contain only letters, digits, "_" and "-" (at most 200 characters), so it can be used in \${id.port} references`);
  }
  if (id.includes(MOUNT_SEPARATOR)) throw misuse(method, `${what} "${id}" contains "${MOUNT_SEPARATOR}", which is reserved for the steps of mounted workflows`);
  return id;
}

function checkConnector(method: string, connectorId: unknown): BuiltinConnectorId {
  if (typeof connectorId !== 'string' || !(BUILTIN_CONNECTOR_IDS as readonly string[]).includes(connectorId)) {
    throw misuse(method, `connector ${JSON.stringify(connectorId)} must be one of ${BUILTIN_CONNECTOR_IDS.join(', ')}`);
  }
  return connectorId as BuiltinConnectorId;
}

function checkLabel(method: string, label: unknown): string | undefined {
  if (label !== undefined && typeof label !== 'string') throw misuse(method, `label must be a string, got ${typeof label}`);
  return label;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A JSON copy of a literal, so later changes to the caller's object do not change the draft.
 * A reference inside a list or object would be plain text in the format (only a whole input value
 * is read as a reference), which is almost never what was meant: that throws, as do values JSON
 * cannot carry.
 */
function copyLiteral(method: string, value: unknown, where: string, path: Set<object> = new Set()): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw misuse(method, `${where} is ${value}, which JSON cannot carry`);
    return value;
  }
  if (value instanceof Reference) {
    throw misuse(method, `${where} is the reference ${value}; a reference is read only as a whole input value, inside a list or object it would be plain text`);
  }
  if (typeof value !== 'object' || (!Array.isArray(value) && !isPlainObject(value))) {
    throw misuse(method, `${where} is not a JSON value (${value === undefined ? 'undefined' : typeof value === 'object' ? value.constructor?.name ?? 'object' : typeof value})`);
  }
  if (path.has(value)) throw misuse(method, `${where} contains itself`);
  path.add(value);
  const copy = Array.isArray(value)
    ? value.map((item, i) => copyLiteral(method, item, `${where}[${i}]`, path))
    : Object.fromEntries(
        Object.entries(value)
          .filter(([, item]) => item !== undefined) // as JSON.stringify drops them
          .map(([key, item]) => [key, copyLiteral(method, item, `${where}.${key}`, path)]),
      );
  path.delete(value);
  return copy;
}

/** A readable id from what a node uses: `text-upper` → `text_upper`, `acme/greet@latest` → `greet`. */
function baseIdOf(uses: string): string {
  const name = uses.includes('/') ? (uses.split('/')[1] ?? '').split('@')[0]! : uses;
  const base = name.replace(/[^A-Za-z0-9_]+/g, '_').replace(/_+/g, '_').replace(/^_|_$/g, '').slice(0, 180);
  if (base === '') return 'node';
  return /^[0-9]/.test(base) ? `node_${base}` : base;
}

/**
 * A workflow draft under construction: add input, const, platform and output nodes, wire them with
 * references, check the draft with `validate()`, and take the definition with `toJSON()`, a plain
 * v2 workflow (`{ version: 2, nodes }`) that `runs.create` accepts as its `workflow`.
 * Misuse that the format can never accept (a bad or duplicate id, a reference from another
 * builder) throws at once; everything that depends on the node catalog is for `validate()`.
 */
export class WorkflowBuilder {
  readonly #nodes = new Map<string, DraftNode>();

  /**
   * Adds a run input: an `input` node whose id is the name callers pass the input under, of the
   * given connector. Returns a reference to its value (port `value`).
   */
  addInput(name: string, connectorId: BuiltinConnectorId, options: AddInputOptions = {}): PortReference {
    const method = 'addInput';
    const id = this.#claim(method, checkId(method, name, 'input name'));
    const node: DraftNode = { id, uses: 'input', outputType: checkConnector(method, connectorId), label: checkLabel(method, options.label), inputs: new Map() };
    if (options.default !== undefined) node.inputs.set('default', this.#literal(method, options.default, `the default of input "${name}"`));
    this.#nodes.set(id, node);
    return this.#reference(id, 'value');
  }

  /** Adds a `const` node: a fixed value of the given connector. Returns a reference to it (port `value`). */
  addConst(id: string, connectorId: BuiltinConnectorId, value: unknown, options: LabelOptions = {}): PortReference {
    const method = 'addConst';
    this.#claim(method, checkId(method, id, 'const id'));
    if (value === undefined) throw misuse(method, `const "${id}" needs a value`);
    const node: DraftNode = { id, uses: 'const', outputType: checkConnector(method, connectorId), label: checkLabel(method, options.label), inputs: new Map() };
    node.inputs.set('value', this.#literal(method, value, `the value of const "${id}"`));
    this.#nodes.set(id, node);
    return this.#reference(id, 'value');
  }

  /**
   * Adds a platform node (`uses` a node id such as `text-template`, see `searchNodes`) or a
   * mounted published workflow (`<org-slug>/<workflow-slug>`), with its inputs: literals or
   * references. Inputs left undefined are not set. Its id is `options.id`, or one made from
   * `uses` (`text_template`, then `text_template_2`, ...).
   */
  addNode(uses: string, inputs: Record<string, InputValue> = {}, options: AddNodeOptions = {}): NodeHandle {
    const method = 'addNode';
    if (typeof uses !== 'string' || uses.trim() === '') throw misuse(method, `the node to use must be a node id, got ${JSON.stringify(uses)}`);
    if (uses === 'input' || uses === 'output' || uses === 'const') throw misuse(method, `"${uses}" nodes are added with add${uses[0]!.toUpperCase()}${uses.slice(1)}()`);
    const id = options.id === undefined ? this.#freeId(baseIdOf(uses)) : this.#claim(method, checkId(method, options.id, 'node id'));
    const node: DraftNode = { id, uses, label: checkLabel(method, options.label), inputs: new Map() };
    for (const [port, value] of Object.entries(inputs)) {
      if (value !== undefined) node.inputs.set(port, this.#inputValue(method, value, `input "${port}" of node "${id}"`));
    }
    this.#nodes.set(id, node);
    return this.#handle(node);
  }

  /** Sets input `toPort` of a node added with `addNode` to a reference, replacing what it had. */
  connect(from: PortReference | string, toNode: NodeHandle, toPort: string): void {
    const method = 'connect';
    if (!(from instanceof Reference) && parseReference(from) === null) throw misuse(method, `"from" must be a port reference (node.out.<port>) or a \${<nodeId>.<port>} string, got ${JSON.stringify(from)}`);
    if (owners.get(toNode) !== this) throw misuse(method, `the target node ${JSON.stringify(toNode?.id)} was not added to this workflow builder`);
    if (typeof toPort !== 'string' || toPort === '') throw misuse(method, `the target port must be a port name, got ${JSON.stringify(toPort)}`);
    this.#nodes.get(toNode.id)!.inputs.set(toPort, this.#inputValue(method, from, `input "${toPort}" of node "${toNode.id}"`));
  }

  /**
   * Adds a run output: an `output` node whose id is the name the output comes back under, reading
   * `value` (usually a reference; a literal is returned as it is). Output nodes take no
   * `outputType`: their kind follows what they read.
   */
  addOutput(name: string, value: PortReference | InputValue, options: LabelOptions = {}): void {
    const method = 'addOutput';
    const id = this.#claim(method, checkId(method, name, 'output name'));
    if (value === undefined) throw misuse(method, `output "${name}" needs a value to return, such as node.out.<port>`);
    const node: DraftNode = { id, uses: 'output', label: checkLabel(method, options.label), inputs: new Map() };
    node.inputs.set('value', this.#inputValue(method, value, `the value of output "${name}"`));
    this.#nodes.set(id, node);
  }

  /**
   * Checks the draft. Without options, offline and synchronously: the contract's workflow schema
   * and the structure the server checks without NodeSpecs (ids, interface nodes and their
   * literals, references to existing nodes and to the `value` ports of input and const nodes,
   * cycles, at least one output). Platform nodes' ports and types are not checked then.
   *
   * With `{ client }`, online: each distinct platform node's spec is fetched once with
   * `nodes.get`, and the draft is checked as `runs.create` checks it, with the server's messages:
   * unknown nodes, unknown and missing ports, literals against their connectors (`optionValues`,
   * bounds), connections between incompatible connectors, and const values and input defaults
   * against the ports they feed (as for a run that leaves those inputs out). Mounted workflows
   * are not fetched: their inputs and output ports are checked only when a run is created.
   * Rejects when `nodes.get` fails other than with a 404.
   */
  validate(): WorkflowValidation;
  validate(options: OnlineValidateOptions): Promise<WorkflowValidation>;
  validate(options?: OnlineValidateOptions): WorkflowValidation | Promise<WorkflowValidation> {
    return options ? validateOnline(this.toJSON(), options) : validateOffline(this.toJSON());
  }

  /** The draft as a plain v2 workflow definition, a fresh copy on every call, nodes in the order added. */
  toJSON(): Workflow {
    const nodes: GraphNode[] = [];
    for (const node of this.#nodes.values()) {
      const graphNode: GraphNode = { id: node.id, uses: node.uses };
      if (node.outputType !== undefined) graphNode.outputType = node.outputType;
      if (node.label !== undefined) graphNode.label = node.label;
      if (node.inputs.size > 0) {
        // fromEntries defines own keys: an input named "__proto__" stays an input, not a prototype.
        graphNode.inputs = Object.fromEntries([...node.inputs].map(([port, value]) => [port, value instanceof Reference ? value.toString() : structuredClone(value)]));
      }
      nodes.push(graphNode);
    }
    return { version: 2, nodes };
  }

  #claim(method: string, id: string): string {
    if (this.#nodes.has(id)) throw misuse(method, `id "${id}" is already used by the ${this.#nodes.get(id)!.uses} node "${id}"; node ids (inputs, consts, outputs and nodes alike) are unique in a workflow`);
    return id;
  }

  #freeId(base: string): string {
    if (!this.#nodes.has(base)) return base;
    for (let n = 2; ; n++) if (!this.#nodes.has(`${base}_${n}`)) return `${base}_${n}`;
  }

  #literal(method: string, value: unknown, where: string): unknown {
    if (value instanceof Reference) throw misuse(method, `${where} must be a literal value, not a reference`);
    return copyLiteral(method, value, where);
  }

  #inputValue(method: string, value: unknown, where: string): unknown {
    if (!(value instanceof Reference)) return copyLiteral(method, value, where); // a reference string passes as it is
    if (owners.get(value) !== this) throw misuse(method, `${where}: the reference ${value} was made by another workflow builder`);
    return value;
  }

  #reference(nodeId: string, port: string): PortReference {
    const ref = new Reference(nodeId, port);
    owners.set(ref, this);
    return ref;
  }

  #handle(node: DraftNode): NodeHandle {
    const ports = new Map<string, PortReference>();
    const port = (name: string): PortReference => {
      let ref = ports.get(name);
      if (!ref) {
        if (typeof name !== 'string' || parseReference(formatReference({ nodeId: node.id, port: name })) === null) {
          throw misuse('port', `${JSON.stringify(name)} is not a port name a reference can carry (a letter or "_", then letters, digits, "_" or "-")`);
        }
        ref = this.#reference(node.id, name);
        ports.set(name, ref);
      }
      return ref;
    };
    const isPortName = (key: string | symbol): key is string => typeof key === 'string' && parseReference(formatReference({ nodeId: node.id, port: key })) !== null;
    const out = new Proxy({} as Record<string, PortReference>, { get: (_target, key) => (isPortName(key) ? port(key) : undefined) });
    const handle: NodeHandle = Object.freeze({ id: node.id, uses: node.uses, port, out });
    owners.set(handle, this);
    return handle;
  }
}

/** Starts an empty workflow draft. */
export function createWorkflow(): WorkflowBuilder {
  return new WorkflowBuilder();
}
