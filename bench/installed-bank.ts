/**
 * The benches that glance over an installed bank as a route does: the embedded pair, the bank opened
 * read-only, gavel-mini at a 2,048-token context and the parts `encodeQueries` needs (skill budget
 * 512, the task's end kept), as `gavel route` opens them.
 */
import { readFileSync } from "node:fs";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Library } from "../src/bank/library.js";
import { RenderEncoder } from "../src/render/encode.js";
import { type RouterParts, taskBudgets } from "../src/route/parts.js";

export interface InstalledBank {
  projections: Projections;
  library: Library;
  model: Model;
  parts: RouterParts;
  close(): Promise<void>;
}

export async function openInstalledBank(bankDir: string): Promise<InstalledBank> {
  const { projections: projPath, model: modelPath } = defaultModelPaths();
  const projections = await Projections.load(projPath);
  const library = await Library.openSnapshot(bankDir, projections);
  const model = await Model.load(modelPath, { contextSize: 2048 });
  const encoder = new RenderEncoder(model, 512);
  const parts = { model, projections, encoder, library, ...taskBudgets(2048, 512, encoder), keep: "end" } as unknown as RouterParts;
  return {
    projections, library, model, parts,
    async close() {
      await library.close();
      await model.dispose();
    },
  };
}

/** The examples' 22 requests: examples/demo-tasks.json, then examples/everyday-tasks.json. */
export function exampleRequests(): string[] {
  return ["examples/demo-tasks.json", "examples/everyday-tasks.json"].flatMap((f) => (JSON.parse(readFileSync(f, "utf8")) as { task: string }[]).map((t) => t.task));
}
