// A usage error of the command line (a missing or stray argument, an unknown command): exit 2. Its text
// output is what the command printed before (its help, or the usage); with --json it is one JSON
// object on stderr like every other failure (gavel.ts, describeFailure).

/**
 * A usage error: `message` is one line (for --json), `text` what a terminal gets before it (often the
 * help; blank for a mistyped flag, whose one line says where the help is).
 */
export class UsageError extends Error {
  override readonly name = "UsageError";
  /** What the command prints on stderr without --json. */
  readonly text: string;
  constructor(message: string, text: string) {
    super(message);
    this.text = text;
  }
}

/**
 * Whether `err` is a usage error: a {@link UsageError}, or one thrown by a copy of the class in another
 * bundle (the lab's commands load from `gavel-router/lab`, apart from the CLI's bundle).
 */
export function isUsageError(err: unknown): err is UsageError {
  return err instanceof UsageError || (err instanceof Error && err.name === "UsageError" && typeof (err as { text?: unknown }).text === "string");
}
