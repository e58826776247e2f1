/**
 * Small durability helpers shared by the bank store and the projections writer.
 */
import { open } from "node:fs/promises";

/**
 * fsync a directory, so that a rename or create inside it survives a power cut (on Linux a rename is
 * only durable once its directory is synced).
 */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
