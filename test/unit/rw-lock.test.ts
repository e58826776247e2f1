// The library's readers–writer lock (src/bank/rw-lock.ts) under aborts: a call waiting for the lock
// leaves its queue as soon as its signal aborts (ABORTED, its work never run), the lock's counts stay
// what the calls inside make them, and the calls behind it enter in call order as if it had never
// come. Every wait is for a promise the test settles itself; order is read from settle order.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { ReadWriteLock } from "../../src/bank/rw-lock.js";

/** A promise and its resolve. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** What a call rejected with (null when it resolved). */
const outcome = (p: Promise<unknown>): Promise<unknown> => p.then(() => null, (e: unknown) => e);

/** Pushes `name` to `order` when `p` settles (either way); `p` itself. */
function settles<T>(p: Promise<T>, name: string, order: string[]): Promise<T> {
  p.then(() => order.push(name), () => order.push(name));
  return p;
}

function expectAborted(err: unknown, verb: string, reason: unknown): void {
  expect(err).toBeInstanceOf(GavelError);
  expect(err).toMatchObject({ code: "ABORTED", message: `${verb}: the operation was aborted` });
  expect((err as Error).cause).toBe(reason);
}

describe("ReadWriteLock: a waiting acquisition is abortable", () => {
  it("a reader waiting behind a writer rejects as soon as its signal aborts, never runs, and the waiters behind it enter in order", async () => {
    const lock = new ReadWriteLock();
    const order: string[] = [];
    const entered: string[] = [];
    const writing = deferred();
    const second = deferred();
    const secondEntered = deferred();
    const writer = settles(lock.write(async () => (entered.push("writer"), writing.promise)), "writer", order);
    const controller = new AbortController();
    const reason = new Error("stop the waiting read");
    const aborted = settles(lock.read(async () => void entered.push("aborted"), controller.signal, "Test.read"), "aborted", order);
    const waitingSignal = new AbortController().signal;
    const reader = settles(lock.read(async () => void entered.push("reader"), waitingSignal), "reader", order);
    const writer2 = settles(lock.write(async () => (entered.push("writer2"), secondEntered.resolve(), second.promise)), "writer2", order);
    const last = settles(lock.read(async () => void entered.push("last")), "last", order);
    expect(lock.waiting).toBe(4);
    controller.abort(reason);
    expect(lock.waiting).toBe(3);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    writing.resolve();
    expectAborted(await outcome(aborted), "Test.read", reason);
    await Promise.all([writer, reader, secondEntered.promise]);
    expect(order.slice(0, 2)).toEqual(["aborted", "writer"]); // before the writer ahead of it left
    // the reader that waited with a signal holds no listener on it once inside
    expect(getEventListeners(waitingSignal, "abort")).toHaveLength(0);
    expect(entered).toEqual(["writer", "reader", "writer2"]); // writer2 once the reader left; `last` waits behind it
    expect([lock.readers, lock.waiting]).toEqual([0, 1]);
    second.resolve();
    await Promise.all([writer2, last]);
    expect(entered).toEqual(["writer", "reader", "writer2", "last"]);
    expect([lock.readers, lock.waiting]).toEqual([0, 0]);
  });

  it("a writer waiting for readers to leave, aborted, lets the readers queued behind it in beside those inside", async () => {
    const lock = new ReadWriteLock();
    const inside = deferred();
    const reading = lock.read(() => inside.promise);
    const controller = new AbortController();
    const reason = new Error("stop the waiting write");
    let wrote = false;
    const writer = lock.write(async () => void (wrote = true), controller.signal, "Test.write");
    const lateEntered = deferred();
    const lateDone = deferred();
    const late = lock.read(async () => (lateEntered.resolve(), lateDone.promise));
    expect([lock.readers, lock.waiting]).toEqual([1, 2]);
    controller.abort(reason);
    expectAborted(await outcome(writer), "Test.write", reason);
    // no writer waits any more: the late reader enters while the first is still inside
    await lateEntered.promise;
    expect([lock.readers, lock.waiting]).toEqual([2, 0]);
    inside.resolve();
    lateDone.resolve();
    await Promise.all([reading, late]);
    expect(wrote).toBe(false);
    // the lock is free: a writer now enters at once
    await expect(lock.write(async () => "written")).resolves.toBe("written");
    expect([lock.readers, lock.waiting]).toEqual([0, 0]);
  });

  it("a writer waiting behind a writer, aborted: the next writer still enters after the first", async () => {
    const lock = new ReadWriteLock();
    const order: string[] = [];
    const first = deferred();
    const w1 = settles(lock.write(() => first.promise), "w1", order);
    const controller = new AbortController();
    const reason = new Error("stop w2");
    const entered: string[] = [];
    const w2 = settles(lock.write(async () => void entered.push("w2"), controller.signal, "Test.write"), "w2", order);
    const w3 = settles(lock.write(async () => void entered.push("w3")), "w3", order);
    expect(lock.waiting).toBe(2);
    controller.abort(reason);
    expect(lock.waiting).toBe(1);
    first.resolve();
    expectAborted(await outcome(w2), "Test.write", reason);
    await Promise.all([w1, w3]);
    expect(order.slice(0, 2)).toEqual(["w2", "w1"]); // before the writer ahead of it left
    expect(entered).toEqual(["w3"]);
    expect([lock.readers, lock.waiting]).toEqual([0, 0]);
  });

  it("an already-aborted signal rejects without entering, even when the lock is free", async () => {
    const lock = new ReadWriteLock();
    const reason = new Error("stopped before");
    let ran = 0;
    expectAborted(await outcome(lock.read(async () => void ran++, AbortSignal.abort(reason), "Test.read")), "Test.read", reason);
    expectAborted(await outcome(lock.write(async () => void ran++, AbortSignal.abort(reason), "Test.write")), "Test.write", reason);
    expect(ran).toBe(0);
    expect([lock.readers, lock.waiting]).toEqual([0, 0]);
  });
  it("a waiter let in by another waiter's abort of the same signal still never runs, and leaves the lock free", async () => {
    // a reader inside; behind it a writer and a reader sharing one signal: the abort removes the writer,
    // which lets the reader in while the signal's listeners are still being called
    const lock = new ReadWriteLock();
    const inside = deferred();
    const r0 = lock.read(() => inside.promise);
    const controller = new AbortController();
    const reason = new Error("stop both");
    const entered: string[] = [];
    const w = lock.write(async () => void entered.push("w"), controller.signal, "Test.write");
    const r = lock.read(async () => void entered.push("r"), controller.signal, "Test.read");
    expect(lock.waiting).toBe(2);
    controller.abort(reason);
    expectAborted(await outcome(w), "Test.write", reason);
    expectAborted(await outcome(r), "Test.read", reason);
    expect(entered).toEqual([]);
    inside.resolve();
    await r0;
    expect([lock.readers, lock.waiting]).toEqual([0, 0]);
    let after = 0;
    await lock.write(async () => void after++);
    expect(after).toBe(1);
  });
});
