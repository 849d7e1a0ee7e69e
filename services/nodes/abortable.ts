/**
 * Settles like `work`, or rejects with `signal.reason` as soon as the signal aborts, whichever
 * comes first. Work that cannot be interrupted (a libvips operation, a provider request without
 * signal support) keeps running in the background, but the caller is released at once and its
 * result is dropped.
 */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // The dropped work may still fail; it must not surface as an unhandled rejection.
    work.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
