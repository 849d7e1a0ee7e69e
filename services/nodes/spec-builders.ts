import type { Connector, ConnectorId, Port } from '../contract';

/** Connector fields besides `id`; all optional here. */
export type ConnectorOptions = Partial<Omit<Connector, 'id'>>;

/**
 * A connector with explicit flags. A port with a `defaultValue` is optional unless said
 * otherwise (callers may omit it; the default fills it). Constraint fields are set only when
 * given, so the spec serialises without `undefined` keys.
 */
export function connector(id: ConnectorId, options: ConnectorOptions = {}): Connector {
  const result: Connector = {
    id,
    isOptional: options.isOptional ?? options.defaultValue !== undefined,
    isArray: options.isArray ?? false,
  };
  if (options.defaultValue !== undefined) result.defaultValue = options.defaultValue;
  if (options.optionValues !== undefined) result.optionValues = options.optionValues;
  if (options.minValue !== undefined) result.minValue = options.minValue;
  if (options.maxValue !== undefined) result.maxValue = options.maxValue;
  if (options.maxLength !== undefined) result.maxLength = options.maxLength;
  return result;
}

/** A port map from connectors by name; each port's `name` is its key. */
export function ports(connectors: Record<string, Connector>): Record<string, Port> {
  return Object.fromEntries(Object.entries(connectors).map(([name, c]) => [name, { name, connector: c }]));
}
