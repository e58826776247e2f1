// `gavel mcp` of the packed gavel-router under the SDK's own client, in a scratch project that holds a
// chosen @modelcontextprotocol/sdk and zod (peer-matrix.sh copies this file there and runs it there, so
// that both resolve from that project). Installs examples/skills into a bank first. Exits 1 on a wrong
// answer. Checks tools/list, search_skills, load_skill, a refused k=0, resources and prompts.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const require = createRequire(import.meta.url);
const pkg = dirname(require.resolve("gavel-router/package.json"));
const cli = join(pkg, "dist", "cli", "gavel.cjs");
const bank = join(process.cwd(), ".gavel", "bank");
execFileSync(process.execPath, [cli, "install", join(pkg, "examples", "skills"), "--bank", bank, "--context", "2048"], { stdio: "ignore" });

const fail = (what) => { console.error(`FAIL ${what}`); process.exitCode = 1; };
const client = new Client({ name: "peer-matrix", version: "1" });
await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--bank", bank, "--context", "2048"], stderr: "ignore" }));
try {
  const { tools } = await client.listTools();
  if (tools.map((t) => t.name).sort().join() !== "load_skill,search_skills" || !tools.every((t) => t.outputSchema)) fail("tools/list");
  // the client checks structuredContent against the tool's outputSchema
  const search = await client.callTool({ name: "search_skills", arguments: { task: "Turn the product photos into WebP thumbnails", k: 3 } });
  if (search.isError || search.structuredContent?.chosen !== "image-resizing" || search.structuredContent.skills.length !== 3) fail("search_skills");
  const load = await client.callTool({ name: "load_skill", arguments: { skill: "image-resizing" } });
  if (load.isError || load.structuredContent?.name !== "image-resizing") fail("load_skill");
  const bad = await client.callTool({ name: "search_skills", arguments: { task: "x", k: 0 } });
  if (!bad.isError || !/-32602/.test(bad.content[0].text)) fail("k=0 is refused with -32602");
  const { resources } = await client.listResources();
  if (resources.length !== 24) fail(`resources/list (${resources.length})`);
  const read = await client.readResource({ uri: "skill://image-resizing" });
  if (read.contents[0].text !== load.structuredContent.body) fail("resources/read");
  const { prompts } = await client.listPrompts();
  if (prompts.length !== 24) fail(`prompts/list (${prompts.length})`);
  const prompt = await client.getPrompt({ name: "image-resizing" });
  if (prompt.messages[0].content.text !== load.structuredContent.body) fail("prompts/get");
  // read from node_modules: the SDK's exports map package.json to dist/cjs/package.json
  const versions = ["@modelcontextprotocol/sdk", "zod"].map((p) => `${p}@${JSON.parse(readFileSync(join("node_modules", p, "package.json"), "utf8")).version}`).join(", ");
  console.log(`${process.exitCode ? "FAILED" : "passed"}: gavel mcp with ${versions}: tools/list, search_skills, load_skill, k=0, resources/list, resources/read, prompts/list, prompts/get`);
} finally {
  await client.close();
}
