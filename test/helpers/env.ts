import { resetConfig } from "../../src/config.js";

/** Runs `f` with `vars` set in process.env (the configuration read anew), then restores them. */
export function withEnv<T>(vars: Record<string, string>, f: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  resetConfig();
  return f().finally(() => {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    resetConfig();
  });
}
