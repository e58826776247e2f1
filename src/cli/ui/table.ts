/**
 * Text output of the commands' reports: aligned tables, a one-line chart, durations. Our own small
 * code (no dependency weight; ~50 lines): a table package would add more than it saves.
 */

/** A plain text table: columns left-aligned, numbers right-aligned (3 decimals). */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === "number" ? c.toFixed(3) : c)))];
  const widths = header.map((_, j) => Math.max(...cells.map((r) => r[j].length)));
  return cells
    .map((r, i) =>
      r
        .map((c, j) => (i > 0 && typeof rows[i - 1][j] === "number" ? c.padStart(widths[j]) : c.padEnd(widths[j])))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

const SPARK = "▁▂▃▄▅▆▇█";

/** One block character per value, scaled between the curve's min and max (NaN as a space). */
export function sparkline(values: ArrayLike<number>): string {
  const finite = Array.from(values).filter((v) => Number.isFinite(v));
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  let out = "";
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) out += " ";
    else out += SPARK[hi > lo ? Math.round(((v - lo) / (hi - lo)) * (SPARK.length - 1)) : 0];
  }
  return out;
}

/** Milliseconds as "850 ms" or, from a second, "1.2 s". */
export function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(0)} ms`;
}
