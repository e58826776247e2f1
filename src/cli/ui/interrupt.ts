/**
 * Ctrl-C as cancellation: long commands (install, layer, eval) pass an AbortSignal down, so the first
 * SIGINT stops the work at its next check and the command still closes its bank and model.
 */

/** Runs `use` with a signal that SIGINT aborts; the SIGINT handler is removed after, whatever happens. */
export async function withInterrupt<T>(use: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once("SIGINT", onSigint);
  try {
    return await use(controller.signal);
  } finally {
    process.removeListener("SIGINT", onSigint);
  }
}
