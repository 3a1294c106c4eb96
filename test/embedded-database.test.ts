import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Binary, BSON, Decimal128, GridFSBucket, Long, MongoClient, ObjectId } from "mongodb";
import { afterAll, describe, expect, it } from "vitest";
import { SERVICE_ENTRY } from "../src/codegen/build-service.js";
import { projectRoot } from "../src/shared/project-root.js";
import { ensureEmbeddedMongo, startEmbeddedMongo } from "../src/store/embedded-mongo.js";
import { startProcess } from "./helpers/processes.js";
import { eventually } from "./helpers/test-service.js";

/*
 * The embedded default database (mongo-java-server, src/store/embedded-mongo.ts):
 * what the Node driver sees of it, that the H2 file keeps data across a
 * restart (stored as BSON; a file of the library's own storage is converted),
 * that it never outlives the process that started it, and the
 * clear errors of a bad start.
 */

const temp = await mkdtemp(path.join(os.tmpdir(), "embedded-db-"));
afterAll(() => rm(temp, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Runs the service (the build of src/main.ts, as `npm start` does) until it exits; resolves to its exit code and standard error. */
async function runMain(env: Record<string, string | undefined>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [SERVICE_ENTRY], { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stderr };
}

describe("the embedded database", () => {
  it("reports MongoDB 5.0 with wire version 13, and applies concurrent $inc exactly", async () => {
    const db = await startEmbeddedMongo({ kind: "memory" });
    const client = await new MongoClient(db.uri).connect();
    try {
      const hello = await client.db("admin").command({ isMaster: 1 });
      expect(hello.maxWireVersion).toBe(13);
      expect((await client.db("admin").command({ buildInfo: 1 })).version).toBe("5.0.0");
      const counters = client.db("t").collection<{ _id: string; n: number }>("counters");
      await counters.insertOne({ _id: "c", n: 0 });
      await Promise.all(Array.from({ length: 500 }, () => counters.updateOne({ _id: "c" }, { $inc: { n: 1 } })));
      expect((await counters.findOne({ _id: "c" }))?.n).toBe(500);
    } finally {
      await client.close();
      await db.stop();
    }
  });

  it("counts the commands it handles by the application that sent them, for the benchmarks (a bulk write is one)", async () => {
    const db = await startEmbeddedMongo({ kind: "memory" });
    const clients = await Promise.all(["counted-app", "other-app"].map((appName) => new MongoClient(db.uri, { appName }).connect()));
    try {
      const counts = async (application: string) => {
        const reply = await clients[1]!.db("admin").command({ embeddedCommandCounts: application });
        return Object.fromEntries((reply.commands as { name: string; count: number }[]).map((c) => [c.name, Number(c.count)]));
      };
      const things = clients[0]!.db("app").collection<{ _id: number; n?: number }>("things");
      await things.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i })));
      await things.bulkWrite(Array.from({ length: 10 }, (_, i) => ({ updateOne: { filter: { _id: i }, update: { $set: { n: i } } } })));
      await things.findOne({ _id: 3 });
      await expect(things.insertOne({ _id: 3 })).rejects.toMatchObject({ code: 11000 });
      await clients[1]!.db("app").collection("things").findOne({});
      expect(await counts("counted-app")).toMatchObject({ "insert things": 2, "update things": 1, "find things": 1 });
      expect(await counts("other-app")).toMatchObject({ "find things": 1 });
      expect(await counts("other-app")).not.toHaveProperty("embeddedCommandCounts");
      expect(await counts("no-such-app")).toEqual({});
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await db.stop();
    }
  });

  /** Documents of every BSON type the service stores, and a compound unique index over them. */
  const sample = () => [
    { _id: "a", v: 1, at: new Date(1_700_000_000_123), big: Long.fromString("9007199254740993"), x: 1.5, none: null, ok: true },
    { _id: new ObjectId("65f0c0ffee0123456789abcd"), v: 2, dec: Decimal128.fromString("12.34"), bin: new Binary(Buffer.from([0, 1, 2])) },
    { _id: "c", v: 3, nested: { list: [1, "two", { three: [3] }], empty: {} } },
  ];
  const writeSample = async (uri: string) => {
    const client = await new MongoClient(uri).connect();
    try {
      const things = client.db("app").collection("things");
      await things.createIndex({ v: 1, "nested.empty": 1 }, { unique: true });
      await things.insertMany(sample() as never[]);
    } finally {
      await client.close();
    }
  };
  /** Reads the sample back as written, and shows the unique indexes (_id's too) still refuse a duplicate and find by key. */
  const expectSample = async (uri: string) => {
    const client = await new MongoClient(uri, { promoteLongs: false }).connect();
    try {
      const things = client.db("app").collection("things");
      expect(await things.find().sort({ v: 1 }).toArray()).toEqual(sample());
      await expect(things.insertOne({ v: 1 })).rejects.toMatchObject({ code: 11000 });
      await expect(things.insertOne({ _id: "a" as never, v: 9 })).rejects.toMatchObject({ code: 11000 });
      expect(await things.findOne({ v: 3, "nested.empty": {} })).toMatchObject({ _id: "c" });
      await things.insertOne({ _id: "d" as never, v: 4 });
      expect(await things.countDocuments()).toBe(4);
      // Updates: one that leaves the indexed fields alone, one that takes a key in use, one that moves to a free one.
      await things.updateOne({ _id: "d" as never }, { $set: { note: "kept" } });
      expect(await things.findOne({ v: 4 })).toMatchObject({ _id: "d", note: "kept" });
      await expect(things.updateOne({ _id: "d" as never }, { $set: { v: 1 } })).rejects.toMatchObject({ code: 11000 });
      await things.updateOne({ _id: "d" as never }, { $set: { v: 5 } });
      expect(await things.findOne({ v: 5 })).toMatchObject({ _id: "d" });
      expect(await things.findOne({ v: 4 })).toBeNull();
      await things.insertOne({ _id: "e" as never, v: 4 }); // the key it left is free
      await things.deleteOne({ _id: "e" as never });
    } finally {
      await client.close();
    }
  };

  it("keeps the H2 file's data (every BSON type, unique indexes) across a clean restart", async () => {
    const file = path.join(temp, "restart", "database.mv");
    const first = await startEmbeddedMongo({ kind: "h2", file, commitIntervalMs: 100 });
    await writeSample(first.uri);
    await first.stop();
    expect(alive(first.pid)).toBe(false);

    const second = await startEmbeddedMongo({ kind: "h2", file, commitIntervalMs: 100 });
    try {
      await expectSample(second.uri);
    } finally {
      await second.stop();
    }
  });

  it("answers a find in batches as MongoDB does, on both backends: 101 documents first, at most 16 MiB; a 40 MiB GridFS file comes back whole", async () => {
    for (const backend of [{ kind: "memory" as const }, { kind: "h2" as const, file: path.join(temp, "batches", "database.mv"), commitIntervalMs: 100 }]) {
      const db = await startEmbeddedMongo(backend);
      const client = await new MongoClient(db.uri).connect();
      try {
        const bucket = new GridFSBucket(client.db("t"), { bucketName: "b" });
        const bytes = randomBytes(40 * 1024 * 1024);
        const upload = bucket.openUploadStream("f");
        await pipeline(Readable.from([bytes]), upload);
        // The chunks (255 KiB each) as the driver asks for them (no batch size): 64 to a batch, not all 161.
        const chunks = client.db("t").collection("b.chunks").find({ files_id: upload.id }).sort({ n: 1 });
        expect(await chunks.hasNext()).toBe(true);
        expect(chunks.bufferedCount()).toBe(64);
        expect((await chunks.toArray()).length).toBe(161);
        // Small documents: 101 first where no batch size is asked for (the rest by getMore), as MongoDB answers.
        const rows = client.db("t").collection("small");
        await rows.insertMany(Array.from({ length: 300 }, (_, i) => ({ i })));
        const defaulted = rows.find({}, { limit: 200 });
        await defaulted.hasNext();
        expect(defaulted.bufferedCount()).toBe(101);
        expect((await defaulted.toArray()).length).toBe(200);
        const asked = rows.find({}, { limit: 200, batchSize: 200 });
        await asked.hasNext();
        expect(asked.bufferedCount()).toBe(200);
        await asked.close();
        // A batch size asked for is kept; what is read back is the file, byte for byte.
        const small = client.db("t").collection("b.chunks").find({ files_id: upload.id }, { batchSize: 10 });
        await small.hasNext();
        expect(small.bufferedCount()).toBe(10);
        await small.close();
        const read: Buffer[] = [];
        for await (const part of bucket.openDownloadStream(upload.id)) read.push(part as Buffer);
        expect(Buffer.concat(read).equals(bytes)).toBe(true);
        // Only what a find answers is batched: an update, a count and a delete still take every document.
        const all = client.db("t").collection("b.chunks");
        expect((await all.updateMany({ files_id: upload.id }, { $set: { touched: true } })).modifiedCount).toBe(161);
        expect(await all.countDocuments({ touched: true })).toBe(161);
        expect((await all.deleteMany({ files_id: upload.id })).deletedCount).toBe(161);
      } finally {
        await client.close();
        await db.stop();
      }
    }
  });

  it("answers queries by its non-unique indexes exactly as a full read does, on both backends and after a restart", async () => {
    // Documents whose indexed fields take every shape a query must see or skip: dates, numbers, strings, null,
    // missing, arrays (one entry per element), booleans, paths into subdocuments and arrays; and queries of every shape the indexes take (equality
    // prefix, $eq, ranges, $in) or leave to a full read. Each query's answer (in its sort order, or as a set)
    // must be the same with the indexes as after dropping them.
    const base = 1_700_000_000_000;
    const docs = Array.from({ length: 300 }, (_, i) => ({
      _id: `d${String(i).padStart(3, "0")}`,
      group: ["a", "b", "c"][i % 3],
      ...(i % 7 === 0 ? {} : { due: i % 11 === 0 ? null : i % 13 === 0 ? `s${i}` : new Date(base + ((i * 37) % 100) * 1000) }),
      n: i % 5 === 0 ? [i, i + 1] : i % 10,
      flag: i % 2 === 0,
      // A path into subdocuments: a subdocument, missing, null, a string, an array of subdocuments, an array at the end.
      ...[{ data: { ref: `r${i % 4}` } }, {}, { data: null }, { data: "text" }, { data: [{ ref: "r1" }, { ref: `r${i % 3}` }] }, { data: { ref: ["r2", "r9"] } }][i % 6],
      // An array in a compound index (as a message's events_pending): empty, with a repeated element, one element, a scalar, missing.
      ...[{ tags: [] }, { tags: ["x", "y", "x"] }, { tags: ["y"] }, { tags: "x" }, {}][i % 5],
      // In a sparse index: present on some documents only (as a webhook delivery's next_attempt_at).
      ...(i % 3 === 1 ? { next: new Date(base + (i % 17) * 1000) } : {}),
    }));
    const queries: { filter: Record<string, unknown>; sort?: Record<string, 1 | -1>; limit?: number }[] = [
      { filter: { due: { $lte: new Date(base + 50_000) } }, sort: { due: 1, _id: 1 }, limit: 20 },
      { filter: { due: { $lt: new Date(base + 50_000), $gt: new Date(base + 10_000) } } },
      { filter: { due: { $gte: new Date(base + 90_000) } }, sort: { due: -1, _id: -1 } },
      { filter: { due: null } },
      { filter: { due: { $gte: "s" } } },
      { filter: { group: "b" }, sort: { due: 1, _id: 1 } },
      { filter: { group: "b", due: { $lte: new Date(base + 30_000) } }, sort: { due: -1, _id: -1 }, limit: 5 },
      { filter: { group: { $eq: "c" }, flag: true } },
      { filter: { group: { $in: ["a", "c"] } }, sort: { _id: 1 } },
      { filter: { n: 3 } },
      { filter: { n: { $gte: 8 } }, sort: { n: 1, _id: 1 } },
      { filter: { n: { $in: [0, 50, 51] } } },
      { filter: { group: { $ne: "a" } } },
      { filter: { _id: { $in: ["d001", "d002", "d003", "d150"] }, due: { $lte: new Date(base + 99_000) } } },
      { filter: { "data.ref": "r1" } },
      { filter: { "data.ref": { $in: ["r0", "r9"] } }, sort: { _id: -1 } },
      { filter: { "data.ref": { $gte: "r2" } } },
      { filter: { tags: "x" } },
      { filter: { tags: { $in: ["y", "z"] }, due: { $lt: new Date(base + 60_000) } } },
      { filter: { tags: { $in: ["z"] } }, sort: { _id: 1 } },
      { filter: { next: { $lte: new Date(base + 8_000) } }, sort: { next: 1, _id: 1 } },
      { filter: { next: { $gte: new Date(base) } } },
    ];
    const answers = async (things: import("mongodb").Collection<{ _id: string } & Record<string, unknown>>) =>
      Promise.all(
        queries.map(async ({ filter, sort, limit }) => {
          const found = (await things.find(filter, { sort, limit, projection: { _id: 1 } }).toArray()).map((d) => d._id);
          return sort ? found : found.sort();
        }),
      );
    for (const backend of [{ kind: "memory" as const }, { kind: "h2" as const, file: path.join(temp, "secondary", "database.mv"), commitIntervalMs: 100 }]) {
      let db = await startEmbeddedMongo(backend);
      let client = await new MongoClient(db.uri).connect();
      try {
        let things = client.db("app").collection<{ _id: string } & Record<string, unknown>>("things");
        await things.insertMany(docs.slice(0, 150));
        await things.createIndex({ due: 1 });
        await things.createIndex({ group: 1, due: -1, _id: -1 });
        await things.createIndex({ n: 1 });
        await things.createIndex({ "data.ref": 1 });
        await things.createIndex({ tags: 1, due: 1 });
        await things.createIndex({ next: 1 }, { sparse: true });
        await things.insertMany(docs.slice(150));
        // Updates and deletes move and remove entries.
        await things.updateMany({ group: "c", flag: true }, { $set: { due: new Date(base + 5_000) } });
        await things.updateMany({ group: "a", n: 4 }, { $unset: { due: "" } });
        await things.deleteMany({ n: 9 });
        await things.updateMany({ _id: { $in: ["d012", "d042", "d072"] } }, { $set: { "data.ref": "r9" } });
        // Elements added to and taken from indexed arrays, with the other key changed or not.
        await things.updateMany({ n: 2 }, { $push: { tags: "z" } as never, $set: { due: new Date(base + 1_000) } });
        await things.updateMany({ n: 6 }, { $pull: { tags: "x" } as never });
        await things.updateMany({ group: "b", n: 7 }, { $set: { tags: ["z", "z"] } });
        // Into the sparse index, out of it, and moved within it.
        await things.updateMany({ n: 1 }, { $set: { next: new Date(base + 2_000) } });
        await things.updateMany({ n: 4, group: "b" }, { $unset: { next: "" } });
        await things.updateMany({ n: 8 }, { $set: { next: new Date(base + 3_000) } });
        // The index answered: with no sort, a range comes back in the index's order, not the order of insertion.
        const byIndex = (await things.find({ n: { $gte: 0 } }, { projection: { n: 1 } }).toArray()).map((d) => d.n as number);
        expect(byIndex.filter((n) => typeof n === "number")).toEqual([...byIndex.filter((n) => typeof n === "number")].sort((x, y) => x - y));
        if (backend.kind === "h2") {
          // Rebuilt from the documents when the file is opened again.
          await client.close();
          await db.stop();
          db = await startEmbeddedMongo(backend);
          client = await new MongoClient(db.uri).connect();
          things = client.db("app").collection<{ _id: string } & Record<string, unknown>>("things");
        }
        const indexed = await answers(things);
        await things.dropIndexes();
        const scanned = await answers(things);
        expect(indexed).toEqual(scanned);
        expect(scanned[0]).toHaveLength(20);
        expect(scanned.every((a) => a.length > 0)).toBe(true);
      } finally {
        await client.close();
        await db.stop();
      }
    }
  });

  it("keeps partial indexes as MongoDB does: entries only for the documents their filter matches, used only by the queries that hold its conditions, on both backends and after a restart", async () => {
    const base = 1_700_000_000_000;
    // `at` runs against `_id`, so an answer read by an {at: 1} index comes in another order than a full read's.
    const docs = Array.from({ length: 200 }, (_, i) => ({
      _id: `p${String(i).padStart(3, "0")}`,
      state: ["pending", "claimed", "done"][i % 3],
      flag: i % 2 === 0,
      at: new Date(base + (200 - i) * 1000),
      // A filter on an array's first element (as a message's events_pending), on a subdocument's field, and one the
      // index leaves to the library's matcher.
      marks: i % 4 === 0 ? ["sent"] : [],
      dispatch: { state: i % 5 === 0 ? "claimed" : "done" },
      n: i % 10,
    }));
    const ids = (found: { _id: string }[]) => found.map((d) => d._id);
    for (const backend of [{ kind: "memory" as const }, { kind: "h2" as const, file: path.join(temp, "partial", "database.mv"), commitIntervalMs: 100 }]) {
      let db = await startEmbeddedMongo(backend);
      let client = await new MongoClient(db.uri).connect();
      try {
        let things = client.db("app").collection<(typeof docs)[number]>("things");
        await things.insertMany(docs.slice(0, 100));
        await things.createIndex({ at: 1 }, { name: "pending_by_at", partialFilterExpression: { state: "pending" } });
        await things.createIndex({ at: 1 }, { name: "done_flagged_by_at", partialFilterExpression: { $and: [{ state: "done" }, { flag: true }] } });
        await things.createIndex({ at: 1 }, { name: "marked_by_at", partialFilterExpression: { "marks.0": { $exists: true } } });
        await things.createIndex({ at: 1 }, { name: "claimed_by_at", partialFilterExpression: { "dispatch.state": "claimed" } });
        await things.createIndex({ at: 1 }, { name: "high_n_by_at", partialFilterExpression: { n: { $gt: 6 } } });
        await things.insertMany(docs.slice(100));
        await things.updateMany({ _id: { $in: ["p001", "p002"] } }, { $push: { marks: "read" }, $set: { "dispatch.state": "claimed", n: 9 } });
        await things.updateMany({ _id: { $in: ["p000", "p004"] } }, { $set: { marks: [], "dispatch.state": "done", n: 1 } });
        // Into a filter, out of it, and moved within it.
        await things.updateMany({ _id: { $in: ["p001", "p004"] } }, { $set: { state: "pending" } });
        await things.updateMany({ _id: { $in: ["p000", "p003"] } }, { $set: { state: "done" } });
        await things.updateOne({ _id: "p006" }, { $set: { at: new Date(base) } });
        await things.deleteOne({ _id: "p009" });
        if (backend.kind === "h2") {
          // The filters are read back from the stored index descriptions when the file is opened again.
          await client.close();
          await db.stop();
          db = await startEmbeddedMongo(backend);
          client = await new MongoClient(db.uri).connect();
          things = client.db("app").collection<(typeof docs)[number]>("things");
        }
        const stored = await things.find({}).toArray();
        const expected = (keep: (d: (typeof stored)[number]) => boolean) =>
          stored.filter(keep).sort((a, b) => a.at.getTime() - b.at.getTime() || a._id.localeCompare(b._id)).map((d) => d._id);
        const since = new Date(base + 50_000);
        // Queries that hold a filter's conditions are read by its index: in the index's order, without a sort.
        const pending = ids(await things.find({ state: "pending", at: { $gte: since } }).toArray());
        expect(pending).toEqual(expected((d) => d.state === "pending" && d.at >= since));
        expect(pending).toContain("p001");
        expect(pending).not.toContain("p000");
        expect(ids(await things.find({ state: "done", flag: true, at: { $gte: since } }).toArray())).toEqual(expected((d) => d.state === "done" && d.flag && d.at >= since));
        const marked = ids(await things.find({ "marks.0": { $exists: true }, at: { $gte: since } }).toArray());
        expect(marked).toEqual(expected((d) => d.marks.length > 0 && d.at >= since));
        expect(marked).toContain("p001");
        expect(marked).not.toContain("p004");
        expect(ids(await things.find({ "dispatch.state": "claimed", at: { $gte: since } }).toArray())).toEqual(expected((d) => d.dispatch.state === "claimed" && d.at >= since));
        expect(ids(await things.find({ n: { $gt: 6 }, at: { $gte: since } }).toArray())).toEqual(expected((d) => d.n > 6 && d.at >= since));
        // A query that does not hold them reads every document (in the order stored), and misses none the filters leave out.
        const all = ids(await things.find({ at: { $gte: since } }).toArray());
        expect([...all].sort()).toEqual(expected((d) => d.at >= since).sort());
        expect(all).toEqual([...all].sort());
        expect(ids(await things.find({ state: "claimed", at: { $gte: since } }).toArray()).sort()).toEqual(expected((d) => d.state === "claimed" && d.at >= since).sort());
        const described = await things.listIndexes().toArray();
        expect(described.find((i) => i.name === "done_flagged_by_at")).toMatchObject({ key: { at: 1 }, partialFilterExpression: { $and: [{ state: "done" }, { flag: true }] } });
        // The same name with another filter is refused, as MongoDB refuses it; a partial unique index is refused by name.
        await expect(things.createIndex({ at: 1 }, { name: "pending_by_at", partialFilterExpression: { state: "claimed" } })).rejects.toThrow();
        await expect(things.createIndex({ flag: 1 }, { name: "unique_flag", unique: true, partialFilterExpression: { state: "done" } })).rejects.toThrow(/partial unique index \(unique_flag\)/);
        // Filters an index could not be used for as written, and what MongoDB refuses, are refused.
        await expect(things.createIndex({ at: 1 }, { name: "two_on_n", partialFilterExpression: { $and: [{ n: { $gt: 1 } }, { n: { $lt: 5 } }] } })).rejects.toThrow(/n has more than one condition/);
        await expect(things.createIndex({ at: 1 }, { name: "unmarked", partialFilterExpression: { "marks.0": { $exists: false } } })).rejects.toThrow(/\$exists: false/);
        await expect(things.createIndex({ at: 1 }, { name: "sparse_too", sparse: true, partialFilterExpression: { state: "done" } })).rejects.toThrow(/partialFilterExpression and sparse/);
        // A partial index created before its collection exists is partial too, and creating it again changes nothing.
        const fresh = client.db("app").collection<(typeof docs)[number]>(`fresh_${backend.kind}`);
        for (let i = 0; i < 2; i++) await fresh.createIndex({ at: 1 }, { name: "pending_by_at", partialFilterExpression: { state: "pending" } });
        await fresh.insertMany(docs.slice(0, 30));
        const unfiltered = ids(await fresh.find({ at: { $gte: new Date(base) } }).toArray());
        expect(unfiltered).toHaveLength(30);
        expect(unfiltered).toEqual([...unfiltered].sort());
        expect(ids(await fresh.find({ state: "pending", at: { $gte: new Date(base) } }).toArray())).toEqual(
          docs.slice(0, 30).filter((d) => d.state === "pending").sort((a, b) => a.at.getTime() - b.at.getTime()).map((d) => d._id),
        );
      } finally {
        await client.close();
        await db.stop();
      }
    }
  });

  it("reads an aggregate led by a $match as a find of it (by an index that holds it), with the answer of a full read, on both backends", async () => {
    const base = 1_700_000_000_000;
    // `at` runs against `_id`: documents read by the {at: 1} index come in another order than a full read's.
    const docs = Array.from({ length: 120 }, (_, i) => ({
      _id: `a${String(i).padStart(3, "0")}`,
      state: ["pending", "done", "done"][i % 3],
      sender: `s${i % 4}`,
      at: new Date(base + (120 - i) * 1000),
    }));
    for (const backend of [{ kind: "memory" as const }, { kind: "h2" as const, file: path.join(temp, "aggregate", "database.mv"), commitIntervalMs: 100 }]) {
      const db = await startEmbeddedMongo(backend);
      const client = await new MongoClient(db.uri).connect();
      try {
        const things = client.db("app").collection<(typeof docs)[number]>("things");
        await things.createIndex({ at: 1 }, { name: "pending_by_at", partialFilterExpression: { state: "pending" } });
        await things.insertMany(docs);
        const pending = docs.filter((d) => d.state === "pending");
        const byAt = (list: typeof docs) => [...list].sort((a, b) => a.at.getTime() - b.at.getTime()).map((d) => d._id);
        // Held by the partial index: read by it, so in its order (a full read gives the order stored).
        const matched = await things.aggregate<{ _id: string }>([{ $match: { state: "pending", at: { $gte: new Date(base) } } }, { $project: { _id: 1 } }]).toArray();
        expect(matched.map((d) => d._id)).toEqual(byAt(pending));
        // Not held by an index: the same documents, read whole, in the order stored.
        const unheld = await things.aggregate<{ _id: string }>([{ $match: { sender: "s1" } }, { $project: { _id: 1 } }]).toArray();
        expect(unheld.map((d) => d._id)).toEqual(docs.filter((d) => d.sender === "s1").map((d) => d._id));
        // The gauges' shape (a $match, a $match of an $expr, a $group with $min): the answer of the same pipeline
        // over every document.
        const cut = new Date(base + 60_000);
        const gauges = [
          { $match: { state: "pending", at: { $gte: new Date(base) } } },
          { $match: { $expr: { $lte: ["$at", cut] } } },
          { $group: { _id: "$sender", n: { $sum: 1 }, oldest: { $min: "$at" } } },
          { $sort: { _id: 1 } },
        ];
        const expected = ["s0", "s1", "s2", "s3"]
          .map((sender) => pending.filter((d) => d.sender === sender && d.at <= cut))
          .filter((group) => group.length > 0)
          .map((group) => ({ _id: group[0]!.sender, n: group.length, oldest: new Date(Math.min(...group.map((d) => d.at.getTime()))) }));
        expect(await things.aggregate(gauges).toArray()).toEqual(expected);
        expect(await things.aggregate([{ $match: {} }, ...gauges]).toArray()).toEqual(expected);
        // Only the aggregate's own read is narrowed: a $lookup of the same collection reads it as usual.
        const joined = await things
          .aggregate<{ _id: string; same: { _id: string }[] }>([
            { $match: { state: "pending", at: { $gte: new Date(base) } } },
            { $limit: 2 },
            { $lookup: { from: "things", localField: "sender", foreignField: "sender", as: "same" } },
          ])
          .toArray();
        expect(joined.map((d) => d.same.length)).toEqual([30, 30]);
      } finally {
        await client.close();
        await db.stop();
      }
    }
  });

  it("counts from its indexes (countDocuments, a $group of $sum by one field) exactly as a full read does, while documents change, on both backends", async () => {
    // Documents whose counted fields take the shapes a count must see or skip: strings, numbers, dates, null,
    // missing, arrays (a multikey index counts from the documents); sparse and partial indexes. Each count must be
    // the same with the indexes as after dropping them, and each must count something.
    const base = 1_700_000_000_000;
    const docs = Array.from({ length: 400 }, (_, i) => ({
      _id: `c${String(i).padStart(3, "0")}`,
      ws: ["w1", "w2"][i % 2],
      dir: i % 5 === 0 ? "in" : "out",
      ...(i % 17 === 0 ? {} : { status: i % 23 === 0 ? null : i % 29 === 0 ? 7 : ["accepted", "sent", "delivered", "read", "failed"][i % 5] }),
      at: i % 31 === 0 ? `t${i}` : new Date(base + (i % 100) * 1000),
      n: i % 4,
      tags: i % 3 === 0 ? ["x", "y"] : "x",
      ...(i % 3 === 1 ? { next: new Date(base + (i % 13) * 1000) } : {}),
      state: i % 4 === 0 ? "pending" : "done",
    }));
    type Thing = (typeof docs)[number] & Record<string, unknown>;
    const filters: Record<string, unknown>[] = [
      { ws: "w1", dir: "out" },
      { ws: "w2", dir: { $eq: "out" }, at: { $gte: new Date(base + 40_000) } },
      { ws: "w1", dir: "in", at: { $lt: new Date(base + 70_000), $gt: new Date(base + 10_000) } },
      { ws: "w1", dir: "out", at: { $gte: "t" } },
      { ws: { $in: ["w1", "w2", "w1"] } },
      { ws: "w1", dir: "out", status: "read" },
      { ws: "w2", dir: "out", status: { $in: ["sent", "failed"] } },
      { ws: "w2", dir: { $ne: "in" } },
      { ws: "w1", n: 2 },
      {},
      { tags: "y" },
      { next: { $gte: new Date(base + 5_000) } },
      { state: "pending", at: { $gte: new Date(base) } },
    ];
    const w2out = { ws: "w2", dir: "out" };
    const groupings: [Record<string, unknown>, string | null][] = [
      [w2out, "$status"],
      [w2out, "$dir"],
      [w2out, "$n"],
      // Read whole by both (no index leads with dir): the library groups a field of arrays and plain values by its
      // matching ("x" with ["x", "y"]) under the first value read, so its answer depends on the order read.
      [{ dir: "out" }, "$tags"],
      [w2out, null],
      [{ ws: "w1", dir: "out", status: { $in: ["read", "sent", "nothing"] } }, "$status"],
      [{ ws: "w1", dir: "out", status: { $gt: "delivered" } }, "$status"],
      [{ ws: "w1", dir: "in", at: { $lte: new Date(base + 50_000) } }, "$ws"],
    ];
    const counts = async (things: import("mongodb").Collection<Thing>) => ({
      each: await Promise.all(filters.map((filter) => things.countDocuments(filter))),
      grouped: await Promise.all(
        groupings.map(async ([match, by]) => {
          const groups = await things.aggregate<{ _id: unknown; n: number; twice: number }>([{ $match: match }, { $group: { _id: by, n: { $sum: 1 }, twice: { $sum: 2 } } }]).toArray();
          return groups.sort((a, b) => JSON.stringify(a._id).localeCompare(JSON.stringify(b._id)));
        }),
      ),
    });
    for (const backend of [{ kind: "memory" as const }, { kind: "h2" as const, file: path.join(temp, "counts", "database.mv"), commitIntervalMs: 100 }]) {
      const db = await startEmbeddedMongo(backend);
      const client = await new MongoClient(db.uri).connect();
      try {
        const things = client.db("app").collection<Thing>("things");
        await things.insertMany(docs.slice(0, 200));
        await things.createIndex({ ws: 1, dir: 1, status: 1 });
        await things.createIndex({ ws: 1, dir: 1, at: -1, _id: -1 });
        await things.createIndex({ ws: 1, n: 1 });
        await things.createIndex({ tags: 1 });
        await things.createIndex({ next: 1 }, { sparse: true });
        await things.createIndex({ at: 1 }, { name: "pending_by_at", partialFilterExpression: { state: "pending" } });
        // Counted once before the writes below, which the indexes' counting structures then follow.
        await counts(things);
        await things.insertMany(docs.slice(200));
        await things.updateMany({ ws: "w1", n: 1 }, { $set: { status: "read" } });
        await things.updateMany({ ws: "w2", n: 3 }, { $unset: { status: "" }, $set: { state: "pending" } });
        await things.deleteMany({ ws: "w2", n: 1, dir: "in" });
        // Counted while statuses change: each grouped answer adds up to the same total.
        const moving = Promise.all(["accepted", "sent", "delivered"].map((status, i, all) => things.updateMany({ ws: "w2", dir: "out", status }, { $set: { status: all[i + 1] ?? "read" } })));
        const totals = await Promise.all(
          Array.from({ length: 5 }, async () =>
            (await things.aggregate<{ n: number }>([{ $match: { ws: "w2", dir: "out" } }, { $group: { _id: "$status", n: { $sum: 1 } } }]).toArray()).reduce((a, g) => a + g.n, 0),
          ),
        );
        await moving;
        expect(new Set(totals)).toEqual(new Set([await things.countDocuments({ ws: "w2", dir: "out" })]));
        const indexed = await counts(things);
        await things.dropIndexes();
        const scanned = await counts(things);
        expect(indexed).toEqual(scanned);
        expect(scanned.each.every((n) => n > 0)).toBe(true);
        expect(scanned.grouped.every((groups) => groups.length > 0)).toBe(true);
      } finally {
        await client.close();
        await db.stop();
      }
    }
  });

  it("applies every update operator as the library's own update does (an update against a findAndModify of the same document), on both backends", async () => {
    // The update command copies only the fields an update names (ChangedFieldsUpdate.java); findAndModify is still
    // the library's whole-document update. Each case runs as an update on one document and as a findAndModify on a
    // twin (same fields, another _id): the documents stored after must be the same, and so must the errors.
    const base = () => ({
      status: "accepted",
      n: 1,
      price: 2.5,
      created_at: new Date(1_700_000_000_000),
      timeline: { accepted: new Date(1_700_000_000_000), notes: ["a"] },
      reports: ["accepted"],
      items: [
        { k: 1, v: "one" },
        { k: 2, v: "two" },
        { k: 3, v: "three" },
      ],
      tags: ["x", "y"],
      unique_key: "free",
      send: { parameters: [{ name: "code", value: "1" }], flow: null },
    });
    // `modified`: the update's nModified (0: the document is left as it was).
    type Case = { update: Record<string, unknown>; filter?: Record<string, unknown>; arrayFilters?: Record<string, unknown>[]; modified?: 0 | 1; error?: number };
    const cases: Case[] = [
      { update: { $set: { status: "sent", "timeline.sent": new Date(1_700_000_001_000) }, $push: { reports: "sent" } }, modified: 1 },
      { update: { $set: { "send.parameters.0.value": "2", "send.flow": { id: "f" } } }, modified: 1 },
      { update: { $unset: { "timeline.accepted": "", price: "" }, $inc: { n: 2, fresh: 1 } }, modified: 1 },
      { update: { $push: { tags: { $each: ["z", "w"], $slice: -3 }, "timeline.notes": "b" } }, modified: 1 },
      { update: { $addToSet: { tags: "x", reports: { $each: ["sent", "accepted"] } } }, modified: 1 },
      { update: { $addToSet: { tags: "y" } }, modified: 0 },
      { update: { $pull: { items: { k: { $gte: 2 } } }, $pop: { tags: 1 } }, modified: 1 },
      { update: { $pullAll: { reports: ["accepted"] }, $min: { n: 0 }, $max: { price: 9 }, $mul: { fresh: 3 } }, modified: 1 },
      { update: { $rename: { status: "state", "timeline.notes": "notes" } }, modified: 1 },
      { update: { $set: { "items.$.v": "TWO" } }, filter: { "items.k": 2 }, modified: 1 },
      { update: { $set: { "items.$[e].v": "big" } }, arrayFilters: [{ "e.k": { $gte: 2 } }], modified: 1 },
      { update: { $set: { status: "accepted", "timeline.notes": ["a"] } }, modified: 0 },
      { update: { $setOnInsert: { status: "ignored" } }, modified: 0 },
      { update: { $set: { n: Long.fromNumber(1), price: 2.5 } }, modified: 0 },
      { update: { $set: { _id: "other" } }, error: 66 },
      { update: { $set: { timeline: 1 }, $inc: { "timeline.x": 1 } }, error: 40 },
      { update: { $inc: { status: 1 } }, error: 14 },
      { update: { $frobnicate: { n: 1 } }, error: 9 },
      { update: { $set: { unique_key: "taken", status: "never stored" } }, error: 11000 },
    ];
    for (const backend of [{ kind: "memory" as const }, { kind: "h2" as const, file: path.join(temp, "operators", "database.mv"), commitIntervalMs: 100 }]) {
      const db = await startEmbeddedMongo(backend);
      const client = await new MongoClient(db.uri, { promoteLongs: false }).connect();
      try {
        const docs = client.db("app").collection<{ _id: string } & Record<string, unknown>>("docs");
        await docs.createIndex({ unique_key: 1 }, { unique: true, sparse: true });
        await docs.createIndex({ status: 1, n: 1 });
        await docs.insertOne({ _id: "holder", unique_key: "taken" });
        for (const [i, c] of cases.entries()) {
          const ids = { update: `u${i}`, findAndModify: `f${i}` };
          await docs.insertMany([{ _id: ids.update, ...base(), unique_key: ids.update }, { _id: ids.findAndModify, ...base(), unique_key: ids.findAndModify }]);
          const options = c.arrayFilters ? { arrayFilters: c.arrayFilters } : {};
          const [updated, found] = await Promise.allSettled([
            docs.updateOne({ _id: ids.update, ...c.filter }, c.update, options),
            docs.findOneAndUpdate({ _id: ids.findAndModify, ...c.filter }, c.update, { ...options, returnDocument: "after" }),
          ]);
          if (c.error !== undefined) {
            expect(updated, JSON.stringify(c.update)).toMatchObject({ status: "rejected", reason: { code: c.error } });
            expect(found, JSON.stringify(c.update)).toMatchObject({ status: "rejected", reason: { code: c.error } });
          } else {
            expect(updated, JSON.stringify(c.update)).toMatchObject({ status: "fulfilled", value: { matchedCount: 1, modifiedCount: c.modified } });
            expect(found, JSON.stringify(c.update)).toMatchObject({ status: "fulfilled", value: { _id: ids.findAndModify } });
          }
          const [a, b] = await Promise.all([docs.findOne({ _id: ids.update }), docs.findOne({ _id: ids.findAndModify })]);
          const rest = (d: typeof a) => {
            const { _id, unique_key, ...fields } = d!;
            return { fields, unique_key: unique_key === _id ? "own" : unique_key };
          };
          expect(rest(a), JSON.stringify(c.update)).toEqual(rest(b));
          if (c.error !== undefined || c.modified === 0) expect(rest(a).fields, JSON.stringify(c.update)).toEqual(rest({ _id: "", ...base() }).fields);
        }
        // Many documents, some changed and some not; the indexes follow (a find by the secondary index sees each change).
        await docs.insertMany(Array.from({ length: 6 }, (_, i) => ({ _id: `m${i}`, group: "m", status: i % 2 ? "sent" : "accepted", n: i })));
        expect(await docs.updateMany({ group: "m" }, { $set: { status: "sent" } })).toMatchObject({ matchedCount: 6, modifiedCount: 3 });
        expect(await docs.countDocuments({ status: "sent", n: { $gte: 0 }, group: "m" })).toBe(6);
        expect(await docs.countDocuments({ status: "accepted", n: { $gte: 0 }, group: "m" })).toBe(0);
        // What the library still does: an upsert that inserts, and a replacement.
        expect(await docs.updateOne({ _id: "up" }, { $set: { status: "new" }, $setOnInsert: { n: 7 } }, { upsert: true })).toMatchObject({ upsertedCount: 1 });
        expect(await docs.findOne({ _id: "up" })).toEqual({ _id: "up", status: "new", n: 7 });
        expect(await docs.replaceOne({ _id: "up" }, { status: "replaced" })).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
        expect(await docs.findOne({ _id: "up" })).toEqual({ _id: "up", status: "replaced" });
        expect(await docs.updateOne({ _id: "none" }, { $set: { n: 1 } })).toMatchObject({ matchedCount: 0, modifiedCount: 0 });
      } finally {
        await client.close();
        await db.stop();
      }
    }
  });

  it("answers projections that leave out fields as MongoDB does, in every batch, leaving the stored documents whole, on both backends", async () => {
    // A projection that only leaves out top-level fields is answered from copies of the top-level maps
    // (EmbeddedMongoServer.topLevelExclusions); others by the library. Either way the stored documents keep every field.
    const docs = Array.from({ length: 5 }, (_, i) => ({ _id: `p${i}`, n: i, send: { text: `t${i}`, parameters: [{ name: "a", value: "b" }] }, meta: { a: i, b: [i] } }));
    for (const backend of [{ kind: "memory" as const }, { kind: "h2" as const, file: path.join(temp, "projections", "database.mv"), commitIntervalMs: 100 }]) {
      const db = await startEmbeddedMongo(backend);
      const client = await new MongoClient(db.uri).connect();
      try {
        const things = client.db("app").collection<(typeof docs)[number]>("things");
        await things.insertMany(docs);
        const read = (projection: Record<string, 0 | 1 | boolean>) => things.find({ n: { $gte: 0 } }, { projection, sort: { n: 1 }, batchSize: 2 }).toArray();
        expect(await read({ send: 0 })).toEqual(docs.map(({ send: _, ...rest }) => rest));
        expect(await read({ send: false, meta: 0, _id: 0 })).toEqual(docs.map(({ n }) => ({ n })));
        expect(await read({ "meta.b": 0 })).toEqual(docs.map((d) => ({ ...d, meta: { a: d.meta.a } })));
        expect(await read({ n: 1 })).toEqual(docs.map(({ _id, n }) => ({ _id, n })));
        expect(await things.findOne({ _id: "p3" }, { projection: { send: 0 } })).toEqual({ _id: "p3", n: 3, meta: { a: 3, b: [3] } });
        await expect(read({ send: 0, n: 1 })).rejects.toMatchObject({ code: 31253 });
        expect(await things.find({}, { sort: { n: 1 } }).toArray()).toEqual(docs);
      } finally {
        await client.close();
        await db.stop();
      }
    }
  });

  it("updates documents in place while the H2 store writes them in the background, without closing the store", async () => {
    // The library changes a found document's instance in place (fields added and removed); the writer (here
    // every millisecond) must never encode an instance while it changes: a ConcurrentModificationException
    // there closes the store for good. Large documents keep the writer busy inside each one. Finds read the
    // stored instances themselves (no copy) meanwhile, and nested values change too (a push into an array of a
    // sub-document): each update must leave the instance it found as it was.
    const db = await startEmbeddedMongo({ kind: "h2", file: path.join(temp, "busy", "database.mv"), commitIntervalMs: 1 });
    const client = await new MongoClient(db.uri, { maxPoolSize: 16 }).connect();
    try {
      const docs = client.db("app").collection<{ _id: string; n: number; nested: { pushes: number[] } }>("docs");
      const big = Array.from({ length: 20_000 }, (_, i) => `item ${i}`);
      await docs.insertMany(Array.from({ length: 4 }, (_, i) => ({ _id: `d${i}`, big, n: 0, nested: { pushes: [] } })));
      const began = Date.now();
      let updates = 0;
      let reads = 0;
      await Promise.all([
        ...Array.from({ length: 12 }, async (_, w) => {
          for (let i = 0; Date.now() - began < 3000; i++) {
            const id = `d${(w + i) % 4}`;
            updates++;
            await docs.updateOne({ _id: id }, { $inc: { n: 1 }, $set: { [`field${w}`]: i }, $push: { "nested.pushes": w } });
            await docs.findOneAndUpdate({ _id: id, n: { $gte: 0 } }, { $unset: { [`field${w}`]: "" } });
          }
        }),
        ...Array.from({ length: 4 }, async () => {
          while (Date.now() - began < 3000) {
            for (const doc of await docs.find({ n: { $gte: 0 } }).toArray()) expect(doc.nested.pushes.length).toBe(doc.n);
            reads++;
          }
        }),
      ]);
      const stored = await docs.find().toArray();
      expect(stored.reduce((sum, d) => sum + d.n, 0)).toBe(updates);
      for (const doc of stored) expect(doc.nested.pushes.length).toBe(doc.n);
      expect(reads).toBeGreaterThan(0);
      // The size of the documents, counted when asked (the launcher keeps no running total).
      const stats = await client.db("app").command({ collStats: "docs" });
      expect(stats.size).toBe(stored.reduce((sum, d) => sum + BSON.calculateObjectSize(d), 0));
    } finally {
      await client.close();
      await db.stop();
    }
  });

  it("converts an H2 file written by the library's own storage (Java serialization) to BSON storage, losing nothing", async () => {
    // The library's H2 backend as it is, with no type of ours: the storage of every file made before BSON.
    const work = path.join(temp, "stock");
    await mkdir(work, { recursive: true });
    await writeFile(
      path.join(work, "StockH2.java"),
      [
        "import de.bwaldvogel.mongo.MongoServer;",
        "import de.bwaldvogel.mongo.MongoVersion;",
        "import de.bwaldvogel.mongo.backend.h2.H2Backend;",
        "public class StockH2 {",
        "  public static void main(String[] args) throws Exception {",
        "    H2Backend backend = new H2Backend(args[0]);",
        "    backend.version(new MongoVersion() {",
        "      public java.util.List<Integer> getVersionArray() { return java.util.List.of(5, 0, 0); }",
        "      public int getWireVersion() { return 13; }",
        "    });",
        "    MongoServer server = new MongoServer(backend);",
        '    server.bind(new java.net.InetSocketAddress("127.0.0.1", 0));',
        '    System.out.println("listening " + server.getLocalAddress().getPort());',
        "    while (System.in.read() != -1) { }",
        "    server.shutdownNow();",
        "  }",
        "}",
      ].join("\n"),
    );
    const { classpath } = await ensureEmbeddedMongo();
    const javac = spawn("javac", ["-d", work, "-cp", classpath, path.join(work, "StockH2.java")], { stdio: "inherit" });
    expect((await once(javac, "exit"))[0]).toBe(0);
    const file = path.join(work, "database.mv");
    const stock = spawn("java", ["-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", [work, classpath].join(path.delimiter), "StockH2", file], { stdio: ["pipe", "pipe", "inherit"] });
    const [line] = (await once(createInterface({ input: stock.stdout }), "line")) as [string];
    await writeSample(`mongodb://127.0.0.1:${line.split(" ")[1]}/`);
    stock.stdin.end();
    expect((await once(stock, "exit"))[0]).toBe(0);

    for (let start = 0; start < 2; start++) {
      // The first start converts; the second finds the file converted.
      const db = await startEmbeddedMongo({ kind: "h2", file, commitIntervalMs: 100 });
      try {
        if (start === 0) await expectSample(db.uri);
        else {
          const client = await new MongoClient(db.uri).connect();
          expect(await client.db("app").collection("things").countDocuments()).toBe(4);
          await client.close();
        }
      } finally {
        await db.stop();
      }
    }
    expect(await readdir(work)).not.toContain("database.mv.converting");
  });

  it("ends when the process that started it is killed with SIGKILL", async () => {
    const { child, value } = await startProcess("test/helpers/embedded-database-child.ts", {}, (line) =>
      typeof line.pid === "number" ? { pid: line.pid, uri: line.uri as string } : undefined,
    );
    expect(alive(value.pid)).toBe(true);
    child.kill("SIGKILL");
    await once(child, "exit");
    await eventually(async () => (alive(value.pid) ? undefined : true), 15_000);
  });

  it("a start whose port is taken says so, exits non-zero and leaves no database behind", async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    const dataDir = path.join(temp, "port-taken");
    try {
      const { code, stderr } = await runMain({ MONGODB_URI: undefined, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", CONSOLE_PORT: "0", LOG_LEVEL: "warn" });
      expect(code).not.toBe(0);
      expect(stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
    } finally {
      blocker.close();
    }
    // No JVM is left holding this run's data folder.
    await eventually(async () => {
      const ps = spawn("ps", ["-eo", "args"]);
      let out = "";
      ps.stdout.on("data", (d) => (out += d));
      await once(ps, "exit");
      return out.includes(dataDir) ? undefined : true;
    }, 15_000);
  });

  it("an unreachable MONGODB_URI is a clear error naming it", async () => {
    const { code, stderr } = await runMain({ MONGODB_URI: "mongodb://127.0.0.1:1/", WEBHOOK_SECRET_KEY: "7e57".repeat(16), CONSOLE_TOKEN: "unreachable-console-token-0123", PORT: "0", CONSOLE_PORT: "0", LOG_LEVEL: "warn" });
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/The service could not start: the database at mongodb:\/\/127\.0\.0\.1:1\/ cannot be reached \(MONGODB_URI\)/);
  }, 30_000);

  it("without Java, says that Java 17 is needed (or MONGODB_URI)", async () => {
    // A PATH that has node and nothing else.
    const bin = path.join(temp, "bin-without-java");
    await mkdir(bin, { recursive: true });
    await symlink(process.execPath, path.join(bin, "node"));
    const { code, stderr } = await runMain({ MONGODB_URI: undefined, DATA_DIR: path.join(temp, "no-java"), PATH: bin, PORT: "0", CONSOLE_PORT: "0", LOG_LEVEL: "warn" });
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/java .*(not found|could not be started).*Java 17.*MONGODB_URI/i);
  });
});
