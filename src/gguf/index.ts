/**
 * The GGUF container: a streaming header reader, tensor reader (F32/F16/BF16/Q8_0 → float32) and a
 * general writer. Used for test fixtures, projection files and model inspection.
 */
export * from "./types.js";
export { readGgufHeader } from "./reader.js";
export { ggufMeta, ggufMetaNumber, ggufMetaString } from "./metadata.js";
export { readGgufTensor, readGgufTensorBytes, READABLE_TENSOR_TYPES } from "./tensors.js";
export { GgufWriter, type GgufTensorData, type GgufWritableType } from "./writer.js";
/** The f16 conversions the tensor reader and writer use (written once, in util/). */
export { floatToHalf, halfToFloat } from "../util/half.js";
export { openRegularFile, readRegularFile, quoteForMessage, RegularFileError, type NotRegularReason } from "./regular-file.js";
export { checkModelHeader, MAX_BLOCK_COUNT } from "./model-check.js";
