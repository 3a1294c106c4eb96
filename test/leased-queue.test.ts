import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { MongoClient, type Collection, type Db } from "mongodb";
import { heldBy, LeasedQueue, leaseUpdate, waiting, type Queued, type Taken } from "../src/jobs/leased-queue.js";
import { systemClock, type Clock } from "../src/shared/clock.js";
import { createLogger } from "../src/shared/logger.js";
import { createTestClock, eventually } from "./helpers/test-service.js";

/*
 * The leased-queue primitive on its own (no service started): a real
 * collection of the run's database, the injectable clock, and queues standing
 * for processes. Claim rounds in due order, races between two processes,
 * leases that lapse, release and completion, wake-ups and the in-flight bound.
 */

interface Job extends Queued {
  _id: string;
  n: number;
}

const logger = createLogger("silent");
let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
  db = client.db(`test_queue_${randomUUID().replaceAll("-", "").slice(0, 12)}`);
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

/** A fresh collection of jobs, with the queue's index. */
async function jobs(): Promise<Collection<Job>> {
  const collection = db.collection<Job>(`jobs_${randomUUID().slice(0, 8)}`);
  await collection.createIndex({ due_at: 1 }, { sparse: true });
  return collection;
}

/** A queue standing for one process (`owner`) whose work records what it took and, unless told otherwise, completes it. */
function processOf(collection: Collection<Job>, owner: string, clock: Clock, o: { maxInFlight?: number; work?: (t: Taken<Job>) => Promise<void>; intervalMs?: number } = {}) {
  const taken: Taken<Job>[] = [];
  const queue = new LeasedQueue<Job>({
    collection,
    name: "test jobs",
    owner,
    clock,
    logger,
    leaseMs: 10_000,
    maxInFlight: o.maxInFlight ?? 100,
    intervalMs: o.intervalMs ?? 60_000,
    batchSize: 5,
    run: async (t) => {
      taken.push(t);
      if (o.work) return o.work(t);
      await collection.updateOne({ _id: t.record._id, ...heldBy(t.lease) }, leaseUpdate({ kind: "complete" }));
    },
  });
  queue.start();
  return { queue, taken };
}

describe("the leased queue", () => {
  it("claims the due records in due order, in rounds, and leaves those not due", async () => {
    const clock = createTestClock();
    const collection = await jobs();
    const now = clock.now().getTime();
    await collection.insertMany([
      ...Array.from({ length: 12 }, (_, n) => ({ _id: `due-${String(n).padStart(2, "0")}`, n, ...waiting(new Date(now - 1000 + n)) })),
      { _id: "later", n: 99, ...waiting(new Date(now + 60_000)) },
    ]);
    const p = processOf(collection, "p1", clock);
    await p.queue.drain();
    await eventually(async () => ((await collection.countDocuments({ due_at: { $exists: true } })) === 1 ? true : undefined));
    expect(p.taken.map((t) => t.record._id)).toEqual(Array.from({ length: 12 }, (_, n) => `due-${String(n).padStart(2, "0")}`));
    expect(new Set(p.taken.map((t) => t.lease)).size).toBe(3); // rounds of five
    expect(p.taken.every((t) => t.lapsedSince === undefined && t.record.lease_owner === t.lease)).toBe(true);
    expect(await collection.findOne({ _id: "later" })).toMatchObject({ lease_owner: null, due_at: new Date(now + 60_000) });
    const done = await collection.findOne({ _id: "due-00" });
    expect(done).toMatchObject({ lease_owner: null, leased_at: null });
    expect(done).not.toHaveProperty("due_at"); // out of the index
  });

  it("gives each record to one of two processes claiming at once", async () => {
    const clock = createTestClock();
    const collection = await jobs();
    const due = new Date(clock.now().getTime() - 1);
    await collection.insertMany(Array.from({ length: 40 }, (_, n) => ({ _id: `r${n}`, n, ...waiting(due) })));
    const a = processOf(collection, "a", clock);
    const b = processOf(collection, "b", clock);
    await Promise.all([a.queue.drain(), b.queue.drain(), a.queue.drain(), b.queue.drain()]);
    await eventually(async () => ((await collection.countDocuments({ due_at: { $exists: true } })) === 0 ? true : undefined));
    const ids = [...a.taken, ...b.taken].map((t) => t.record._id).sort();
    expect(ids).toEqual(Array.from({ length: 40 }, (_, n) => `r${n}`).sort());
  });

  it("takes a record whose lease lapsed (its process stopped) once the lease ends, telling when that lease began", async () => {
    const clock = createTestClock();
    const collection = await jobs();
    const leasedAt = clock.now();
    await collection.insertOne({ _id: "orphan", n: 1, due_at: new Date(leasedAt.getTime() + 10_000), lease_owner: "stopped:1", leased_at: leasedAt });
    const p = processOf(collection, "p", clock);
    await p.queue.drain();
    expect(p.taken).toEqual([]); // the lease holds
    clock.advance(10_001);
    await p.queue.drain();
    await eventually(async () => (p.taken.length === 1 ? true : undefined));
    expect(p.taken[0]).toMatchObject({ record: { _id: "orphan" }, lapsedSince: leasedAt });
    expect(p.taken[0]!.lease).toMatch(/^p:/);
  });

  it("begins work stored held by this process without a claim; a stopped queue begins nothing and its lease lapses", async () => {
    const clock = createTestClock();
    const collection = await jobs();
    const p = processOf(collection, "p", clock);
    const held = p.queue.held(clock.now());
    expect(held.fields).toMatchObject({ lease_owner: held.lease, leased_at: clock.now(), due_at: new Date(clock.now().getTime() + 10_000) });
    const record = { _id: "new", n: 1, ...held.fields };
    await collection.insertOne(record);
    p.queue.begin({ record, lease: held.lease });
    await eventually(async () => ((await collection.findOne({ _id: "new" }))?.due_at === undefined ? true : undefined));
    expect(p.taken.map((t) => t.lease)).toEqual([held.lease]);

    const stopped = processOf(collection, "s", clock);
    await stopped.queue.stop();
    const orphan = { _id: "left", n: 2, ...stopped.queue.held(clock.now()).fields };
    await collection.insertOne(orphan);
    stopped.queue.begin({ record: orphan, lease: orphan.lease_owner! });
    expect(stopped.taken).toEqual([]);
    clock.advance(10_001);
    await p.queue.drain();
    await eventually(async () => (p.taken.some((t) => t.record._id === "left") ? true : undefined));
    expect(p.taken.find((t) => t.record._id === "left")!.lapsedSince).toEqual(orphan.leased_at);
  });

  it("guards writes by the lease: a process whose lease was taken over changes nothing", async () => {
    const clock = createTestClock();
    const collection = await jobs();
    await collection.insertOne({ _id: "x", n: 1, ...waiting(new Date(clock.now().getTime() - 1)) });
    let first: Taken<Job> | undefined;
    const slow = processOf(collection, "slow", clock, { work: async (t) => void (first = t) }); // takes it and never finishes
    await slow.queue.drain();
    await eventually(async () => (first ? true : undefined));
    clock.advance(10_001); // its lease lapses
    const next = processOf(collection, "next", clock);
    await next.queue.drain();
    await eventually(async () => ((await collection.findOne({ _id: "x" }))?.due_at === undefined ? true : undefined));
    const late = await collection.updateOne({ _id: "x", ...heldBy(first!.lease) }, leaseUpdate({ kind: "release", dueAt: clock.now() }));
    expect(late.matchedCount).toBe(0);
    expect(next.taken[0]!.lapsedSince).toEqual(first!.record.leased_at);
  });

  it("wakes at the instant a released record falls due, without a claim in between", async () => {
    const collection = await jobs();
    // Real time: the wake-up is a timer. The recurring claim (intervalMs) is far off and never runs here.
    const p = processOf(collection, "p", systemClock, { intervalMs: 60_000 });
    const dueAt = new Date(Date.now() + 300);
    await collection.insertOne({ _id: "retry", n: 1, ...waiting(dueAt) });
    await p.queue.drain(); // nothing due yet; the drain's look-ahead sets the wake-up
    expect(p.taken).toEqual([]);
    await eventually(async () => (p.taken.length === 1 ? true : undefined), 10_000);
    expect(Date.now()).toBeGreaterThanOrEqual(dueAt.getTime());
  });

  it("wakes for a record due before the wake-up already set, found by a drain's look-ahead", async () => {
    const collection = await jobs();
    // Real time (timers). The recurring claim never runs; only drains and wake-ups take records.
    const p = processOf(collection, "p", systemClock, { intervalMs: 60_000 });
    // A wake-up set for a record due in a minute (as the accepting process sets one for a send scheduled then) …
    const later = new Date(Date.now() + 60_000);
    await collection.insertOne({ _id: "later", n: 1, ...waiting(later) });
    p.queue.wakeAt(later);
    // … then a record due sooner that this process set no wake-up for (stored by another process, or scheduled
    // beyond the look-ahead when stored): the next drain's look-ahead finds it, and it is taken at its instant,
    // not at the later record's wake-up (the drain skipped the look-ahead while a wake-up was set).
    const sooner = new Date(Date.now() + 300);
    await collection.insertOne({ _id: "sooner", n: 2, ...waiting(sooner) });
    await p.queue.drain();
    await eventually(async () => (p.taken.some((t) => t.record._id === "sooner") ? true : undefined), 20_000);
    expect(p.taken.map((t) => t.record._id)).toEqual(["sooner"]);
    await p.queue.stop();
  });

  it("keeps at most maxInFlight records in progress, claiming more as work ends", async () => {
    const clock = createTestClock();
    const collection = await jobs();
    await collection.insertMany(Array.from({ length: 9 }, (_, n) => ({ _id: `w${n}`, n, ...waiting(new Date(clock.now().getTime() - 1)) })));
    let running = 0;
    let most = 0;
    const p = processOf(collection, "p", clock, {
      maxInFlight: 3,
      work: async (t) => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
        await collection.updateOne({ _id: t.record._id, ...heldBy(t.lease) }, leaseUpdate({ kind: "complete" }));
      },
    });
    await p.queue.drain();
    await eventually(async () => ((await collection.countDocuments({ due_at: { $exists: true } })) === 0 ? true : undefined));
    expect(p.taken).toHaveLength(9);
    expect(most).toBeLessThanOrEqual(3);
  });
});
