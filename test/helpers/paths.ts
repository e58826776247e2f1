import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const sharedDir = join(repoRoot, "..", "shared");
export const storiesPath = join(sharedDir, "models", "stories260Ktok512.gguf");
