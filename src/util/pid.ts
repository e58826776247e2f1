/**
 * Whether a process id names a live process, by signal 0 (`kill(pid, 0)`: nothing is sent). Only an
 * integer from 1 to 2^31 − 1 is probed: 0 and negative values name process groups (`kill(0, 0)` reaches
 * this process's own group, `kill(-1, 0)` every process this user may signal, so either "succeeds"), and
 * Node refuses a value past a 32-bit int. Anything else read from a file (a string, a fraction, NaN) is
 * no pid at all.
 *
 * @module
 */

/** What signal 0 says of a pid. */
export type PidState =
  /** The process exists: signal 0 succeeded, or answered EPERM (another user's process). */
  | "alive"
  /** No such process: ESRCH. */
  | "gone"
  /** Not a pid that may be probed (see the module); never signalled. */
  | "invalid"
  /** The probe failed another way (neither provably alive nor provably gone). */
  | "unknown";

/** Whether `pid` is a value that may be probed: an integer from 1 to 2^31 − 1. */
export function isProbeablePid(pid: unknown): pid is number {
  return typeof pid === "number" && Number.isInteger(pid) && pid >= 1 && pid <= 0x7fffffff;
}

/** What signal 0 says of `pid`; a value that is not a probeable pid is `"invalid"` and is not signalled. */
export function pidState(pid: unknown): PidState {
  if (!isProbeablePid(pid)) return "invalid";
  try {
    process.kill(pid, 0);
    return "alive";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "EPERM" ? "alive" : code === "ESRCH" ? "gone" : "unknown";
  }
}

/** Whether `pid` names a live process (this user's or another's): {@link pidState} is `"alive"`. */
export function pidAlive(pid: unknown): pid is number {
  return pidState(pid) === "alive";
}
