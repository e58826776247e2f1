// A projections file written again with one change to its metadata and its maps as they are: what
// the tests of a damaged word table (the reference idf, the domain table) read back.
import { join } from "node:path";
import { GgufWriter, readGgufHeader } from "../../src/gguf/index.js";
import { Projections } from "../../src/projections/projections.js";

/** A function writing `good` again into `dir`/`name` with `change` applied to its metadata; it returns the new file's path. */
export async function projectionsRewriter(good: string, dir: string): Promise<(name: string, change: (meta: Map<string, unknown>) => void) => Promise<string>> {
  const header = await readGgufHeader(good);
  const p = await Projections.load(good);
  return async (name, change) => {
    const meta = new Map(header.metadata as Map<string, unknown>);
    change(meta);
    const w = new GgufWriter();
    for (const [k, v] of meta) if (k !== "general.alignment") w.set(k, v as never);
    w.addTensor("gavel.w_q", [p.model.nEmbd, p.dim], p.wq, 0);
    w.addTensor("gavel.w_s", [p.model.nEmbd, p.dim], p.ws, 0);
    const path = join(dir, name);
    await w.write(path);
    return path;
  };
}
