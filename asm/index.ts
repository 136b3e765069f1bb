// The WebAssembly chunk kernels, one module: the block product and the Householder updates.
export { packPanels, multiplyStrips } from "./gemm";
export { reflect, reflectPair } from "./householder";
