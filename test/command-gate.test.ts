import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { PRIORITY_APP_NAME } from "../src/store/command-gate.js";

/*
 * The command gate in front of the embedded FerretDB (src/store/command-gate.ts),
 * through the real driver: atomic single-document updates, and the priority
 * lane for connections named PRIORITY_APP_NAME. Against MONGODB_URI there is
 * no gate, and these tests are skipped.
 */

const uri = inject("mongoUri");
const embedded = !process.env.MONGODB_URI;
const database = `gate_${randomUUID().slice(0, 8)}`;
let normal: MongoClient;
let priority: MongoClient;

beforeAll(async () => {
  normal = await new MongoClient(uri, { maxPoolSize: 20, minPoolSize: 20 }).connect();
  priority = await new MongoClient(uri, { appName: PRIORITY_APP_NAME, maxPoolSize: 2 }).connect();
  // Open every pooled connection now, so that the writes below reach the gate at once.
  await Promise.all(Array.from({ length: 20 }, () => normal.db(database).command({ ping: 1 })));
});
afterAll(async () => {
  await normal?.db(database).dropDatabase();
  await Promise.all([normal?.close(), priority?.close()]);
});

describe.skipIf(!embedded)("command gate", () => {
  it("applies concurrent $inc of one document without losing any", async () => {
    const counters = normal.db(database).collection<{ _id: string; n: number }>("counters");
    await counters.insertOne({ _id: "c", n: 0 });
    await Promise.all(Array.from({ length: 200 }, () => counters.updateOne({ _id: "c" }, { $inc: { n: 1 } })));
    expect((await counters.findOne({ _id: "c" }))?.n).toBe(200);
  });

  it("admits a priority connection's write ahead of the writes already waiting", async () => {
    const rows = normal.db(database).collection("rows");
    const finished: string[] = [];
    const payload = "x".repeat(20_000);
    const waiting = Array.from({ length: 20 }, (_, i) => rows.insertOne({ i, payload }).then(() => finished.push(`normal ${i}`)));
    await Promise.race(waiting); // the first is done; the others wait at the gate
    await priority.db(database).collection("rows").insertOne({ priority: true }).then(() => finished.push("priority"));
    await Promise.all(waiting);
    expect(finished).toHaveLength(21);
    expect(finished.indexOf("priority")).toBeLessThan(10);
  });
});
