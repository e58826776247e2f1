// A forced garbage collection inside a test process (vitest's workers run without --expose-gc): V8's
// flag set at run time, and the `gc` it then defines in a fresh context.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/**
 * Collects garbage until `until()` holds or `rounds` rounds have run, letting timers and finalization
 * callbacks (and what they queue) run between rounds.
 */
export async function collectGarbage(until: () => boolean, rounds = 50): Promise<void> {
  for (let k = 0; k < rounds && !until(); k++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
}
