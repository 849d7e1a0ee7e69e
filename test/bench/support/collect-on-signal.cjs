// A bench instrument, not part of the service: a process started with
// NODE_OPTIONS="--expose-gc --require <this file>" runs a full garbage collection on SIGUSR2, so
// a bench reads the memory its work keeps alive, not whatever garbage the last collection left.
if (typeof globalThis.gc === 'function') process.on('SIGUSR2', () => globalThis.gc());
