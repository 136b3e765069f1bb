// tsdask: Dask's task scheduling and diagnostics for TypeScript notebooks.
// This is the package's main entry (`require("tsdask")`); see README.md.
export * from "./kernel";
