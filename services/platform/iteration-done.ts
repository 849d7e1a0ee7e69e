/**
 * The end of an async iteration, as `next()` and `return()` give it: one object for every stream
 * that ends (never changed by whoever receives it), not one allocated per ending.
 */
export const ITERATION_DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };
