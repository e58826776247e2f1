/**
 * The GGUF container: a streaming header reader, tensor reader (F32/F16/BF16/Q8_0 → float32) and a
 * general writer. Used for test fixtures, projection files and model inspection.
 */
export * from "./types.js";
export {
  readGgufHeader,
  readGgufTensor,
  readGgufTensorBytes,
  halfToFloat,
  ggufMeta,
  ggufMetaNumber,
  ggufMetaString,
  READABLE_TENSOR_TYPES,
} from "./reader.js";
export { GgufWriter, floatToHalf, type GgufTensorData, type GgufWritableType } from "./writer.js";
