// The unit tests of `ResidentServer` over a stand-in router: a model that only disposes, and the
// folders and servers a test made, shut down and removed after each test (registers the afterEach).
import { afterEach } from "vitest";
import { rmSync } from "node:fs";
import type { Model } from "../../src/model/Model.js";
import type { ResidentServer } from "../../src/serve/server.js";

export function residentFixtures(): { model: Model; dirs: string[]; servers: ResidentServer[] } {
  const model = { dispose: async () => undefined } as unknown as Model;
  const dirs: string[] = [];
  const servers: ResidentServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.shutdown()));
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return { model, dirs, servers };
}
