/**
 * Progress of a long command on stderr: one line rewritten in place on a terminal, a plain line every
 * few percent elsewhere (logs, CI), where rewriting would only pile up. Our own small code (no
 * dependency weight; ~60 lines): cli-progress would add a package for one line of output.
 */

/** How a command's progress looks. */
export interface ProgressOptions {
  /** Text before the count on the terminal line, e.g. "scanning ". */
  prefix?: string;
  /** Cells of a `[###...]` bar before the count on the terminal line (default none). */
  bar?: number;
  /** Width the current item's name is cut or padded to (default 40). */
  nameWidth?: number;
  /** Percent between log lines where the stream is not a terminal; 0 prints none there. */
  every: number;
  /** The log line (default "done/total (pct%)"). */
  logLine?: (done: number, total: number, pct: number) => string;
}

/** One command's progress display. */
export class Progress {
  #lastPct = -Infinity;
  /** A terminal line is drawn and not yet ended by a newline. */
  #open = false;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly opts: ProgressOptions,
  ) {}

  /** `done` of `total` items, the current one named `name`; the line ends when done reaches total. */
  update(done: number, total: number, name = ""): void {
    const { stream, opts } = this;
    const pct = Math.floor((100 * done) / Math.max(1, total));
    if (stream.isTTY) {
      const width = opts.bar ?? 0;
      const fill = Math.round((width * done) / Math.max(1, total));
      const bar = width > 0 ? `[${"#".repeat(fill)}${".".repeat(width - fill)}] ` : "";
      const w = opts.nameWidth ?? 40;
      stream.write(`\r${opts.prefix ?? ""}${bar}${done}/${total} ${name.slice(0, w).padEnd(w)}`);
      this.#open = done !== total;
      if (!this.#open) stream.write("\n");
    } else if (opts.every > 0 && (pct >= this.#lastPct + opts.every || done === total)) {
      this.#lastPct = pct;
      stream.write(`${opts.logLine ? opts.logLine(done, total, pct) : `${done}/${total} (${pct}%)`}\n`);
    }
  }

  /** Ends a terminal line left open (the last item did not report, e.g. it needed no work). */
  end(): void {
    if (this.#open) this.stream.write("\n");
    this.#open = false;
  }
}
