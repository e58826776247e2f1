/**
 * Progress of a long command on stderr: one line rewritten in place on a terminal, a plain line every
 * few percent elsewhere (logs, CI), where rewriting would only pile up. Our own small code (no
 * dependency weight; ~100 lines): cli-progress would add a package for one line of output. With
 * `rate`, both show the rate (items per second since the start) and the time left at that rate.
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
  /** The log line (default "done/total (pct%)", then the rate and ETA with `rate`). */
  logLine?: (done: number, total: number, pct: number) => string;
  /** Show the rate and the time left, counting items as this unit ("skills" → "3.2 skills/s, ETA 41 s"). */
  rate?: { unit: string };
  /** The clock in milliseconds (default performance.now); tests pass their own. */
  now?: () => number;
}

/** A duration for a person: "42 s", "3 min 5 s", "2 h 7 min". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "?";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** "3.2 skills/s, ETA 41 s" after `done` of `total` items in `seconds`; "" before there is a rate. */
export function rateText(done: number, total: number, seconds: number, unit: string): string {
  if (done <= 0 || seconds <= 0) return "";
  const rate = done / seconds;
  const shown = rate >= 100 ? rate.toFixed(0) : rate >= 10 ? rate.toFixed(1) : rate.toFixed(2);
  return done >= total ? `${shown} ${unit}/s, took ${formatDuration(seconds)}` : `${shown} ${unit}/s, ETA ${formatDuration((total - done) / rate)}`;
}

/** One command's progress display. */
export class Progress {
  #lastPct = -Infinity;
  /** A terminal line is drawn and not yet ended by a newline. */
  #open = false;
  readonly #started: number;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly opts: ProgressOptions,
  ) {
    this.#started = this.#now();
  }

  /** The rate and ETA text, "" without `rate`. */
  #rate(done: number, total: number): string {
    const { rate } = this.opts;
    if (!rate) return "";
    return rateText(done, total, (this.#now() - this.#started) / 1000, rate.unit);
  }

  #now(): number {
    return this.opts.now ? this.opts.now() : performance.now();
  }

  /** `done` of `total` items, the current one named `name`; the line ends when done reaches total. */
  update(done: number, total: number, name = ""): void {
    const { stream, opts } = this;
    const pct = Math.floor((100 * done) / Math.max(1, total));
    if (stream.isTTY) {
      const width = opts.bar ?? 0;
      const fill = Math.round((width * done) / Math.max(1, total));
      const bar = width > 0 ? `[${"#".repeat(fill)}${".".repeat(width - fill)}] ` : "";
      const w = opts.nameWidth ?? 40;
      const rate = opts.rate ? `${this.#rate(done, total).padEnd(30)} ` : "";
      stream.write(`\r${opts.prefix ?? ""}${bar}${done}/${total} ${rate}${name.slice(0, w).padEnd(w)}`);
      this.#open = done !== total;
      if (!this.#open) stream.write("\n");
    } else if (opts.every > 0 && (pct >= this.#lastPct + opts.every || done === total)) {
      this.#lastPct = pct;
      const rate = this.#rate(done, total);
      const line = opts.logLine ? opts.logLine(done, total, pct) : `${done}/${total} (${pct}%)${rate ? ` ${rate}` : ""}`;
      stream.write(`${line}\n`);
    }
  }

  /** Ends a terminal line left open (the last item did not report, e.g. it needed no work). */
  end(): void {
    if (this.#open) this.stream.write("\n");
    this.#open = false;
  }
}
