// Collections that build graphs for you: delayed function calls (and, later, chunked arrays).
export { delayed, compute, Delayed, type DelayedOptions, type MaybeDelayed } from "./delayed";
export { tokenize } from "./tokenize";
