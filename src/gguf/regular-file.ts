/** The bounded, regular-file-only reader lives in util/ (the lowest layer that reads such files). */
export { openRegularFile, quoteForMessage, readRegularFile, RegularFileError, type NotRegularReason } from "../util/regular-file.js";
