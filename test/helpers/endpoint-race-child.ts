// A process for the endpoint-file break test (test/unit/mcp-endpoint-file-break.test.ts): at
// <startAt> (ms since the epoch) claims <file> as `gavel mcp --port` does (src/cli/mcp/endpoint-file.ts),
// and when it did, holds it until <holdUntil>, then reads the file again: it must still hold this
// process's record. Prints one JSON line { claimed, kept, code }. Bundled with esbuild by the test.
import { readFileSync } from "node:fs";
import { claimEndpointFile } from "../../src/cli/mcp/endpoint-file.js";

const [file, startAt, holdUntil] = process.argv.slice(2);
const token = `t${process.pid}`;
await new Promise((r) => setTimeout(r, Math.max(0, Number(startAt) - Date.now())));
let out: { claimed: boolean; kept?: boolean; code?: string };
try {
  await claimEndpointFile(file, { url: `http://127.0.0.1:1/${process.pid}`, token });
  await new Promise((r) => setTimeout(r, Math.max(0, Number(holdUntil) - Date.now())));
  let kept = false;
  try {
    kept = (JSON.parse(readFileSync(file, "utf8")) as { token?: string }).token === token;
  } catch {
    // gone: not kept
  }
  out = { claimed: true, kept };
} catch (err) {
  out = { claimed: false, code: (err as { code?: string }).code ?? String(err) };
}
process.stdout.write(JSON.stringify(out) + "\n");
