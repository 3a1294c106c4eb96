import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createScheduler } from "../src/jobs/scheduler.js";
import { createLogger } from "../src/shared/logger.js";
import { eventually } from "./helpers/test-service.js";

/*
 * Recurring work on Agenda (src/jobs/scheduler.ts). Agenda reads a string
 * interval through human-interval, which takes "30000 milliseconds" for
 * 30,000 seconds: the sweeps once handed over that way ran every 8 hours, so
 * the scheduler takes intervals as numbers of ms only.
 */

const client = await new MongoClient(inject("mongoUri")).connect();
const db = client.db(`test_scheduler_${randomUUID().replaceAll("-", "").slice(0, 12)}`);
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

describe("the scheduler's recurring jobs", () => {
  it("runs a job every N ms when given N, where Agenda's string form would wait N seconds", async () => {
    const scheduler = createScheduler(db, createLogger("silent"), 50);
    const runs: number[] = [];
    scheduler.define({ name: "test.tick", concurrency: 1, run: async () => void runs.push(Date.now()) });
    await scheduler.every(300, "test.tick");
    await scheduler.start();
    try {
      await eventually(async () => (runs.length >= 2 ? true : undefined), 10_000);
      const job = await db.collection("jobs").findOne({ name: "test.tick" });
      expect(job?.repeatInterval).toBe(300);
      expect(job!.nextRunAt.getTime() - job!.lastRunAt.getTime()).toBe(300);
    } finally {
      await scheduler.stop();
    }
    // The misreading the number form avoids, in the library Agenda uses.
    const humanInterval = (await import("human-interval")).default as (text: string) => number;
    expect(humanInterval("30000 milliseconds")).toBe(30_000_000);
  });
});
