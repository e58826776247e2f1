// Runs once before the test files: writes the generated fixtures that test files and their child
// processes read by a fixed path.
import { tinyLlamaPath } from "./fixtures/tiny-llama.js";

export default async function setup(): Promise<void> {
  await tinyLlamaPath();
}
