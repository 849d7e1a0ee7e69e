import { AddressAllowList } from '../../platform/address-policy';
import { safeFetch, type FetchedFile, type Resolver } from './safe-fetch';

/** Fetches an input URL that is not one of the service's own (see `safeFetch`). */
export type RemoteFetcher = (url: string, options?: { signal?: AbortSignal }) => Promise<FetchedFile>;

/** The fetch settings of the configuration (`FETCH_ALLOW_PRIVATE`, `FETCH_MAX_BYTES`, `FETCH_TIMEOUT_MS`). */
export interface InputFetchSettings {
  allowPrivate: readonly string[];
  maxBytes: number;
  timeoutMs: number;
  /** Replaces DNS (tests). */
  resolve?: Resolver;
}

/** A `RemoteFetcher` bound to the configured allow-list and limits. */
export function createInputFetcher(settings: InputFetchSettings): RemoteFetcher {
  const allow = new AddressAllowList(settings.allowPrivate);
  return (url, options = {}) =>
    safeFetch(url, { ...options, allow, maxBytes: settings.maxBytes, timeoutMs: settings.timeoutMs, ...(settings.resolve ? { resolve: settings.resolve } : {}) });
}
