// Collections that build graphs for you: delayed function calls and chunked arrays.
export { delayed, compute, Delayed, type DelayedOptions, type MaybeDelayed } from "./delayed";
export { tokenize } from "./tokenize";
export * as array from "./array";
