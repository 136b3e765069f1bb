// The WebAssembly chunk kernels, one module: the block product and the Householder update.
export { packPanels, multiplyStrips } from "./gemm";
export { reflect } from "./householder";
