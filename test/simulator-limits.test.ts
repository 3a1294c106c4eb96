import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { MongoClient, type Db } from "mongodb";
import { createSimulatorLimits, THROUGHPUT_REFUSAL } from "../src/network/simulator-limits.js";
import type { Clock } from "../src/shared/clock.js";

/*
 * The simulated network's throughput account on its own (src/network/simulator-limits.ts): a real collection of the
 * run's database and a clock the test sets, read by the account each time it reads the time.
 */

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
  db = client.db(`test_simlimits_${randomUUID().replaceAll("-", "").slice(0, 12)}`);
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

/** A clock that reads `readings` in turn (the last one for ever after), and what it was read for. */
function clockReading(...readings: number[]): Clock & { reads: number } {
  const clock = {
    reads: 0,
    now: () => new Date(readings[Math.min(clock.reads++, readings.length - 1)]!),
  };
  return clock;
}

describe("the simulator's throughput account", () => {
  it("refuses a number past a second's worth at once, then admits it again at its rate", async () => {
    const t = Date.parse("2026-01-01T00:00:00Z");
    const clock = clockReading(t);
    const limits = createSimulatorLimits(db, clock, { throughputMps: 5, pairIntervalMs: 0, pairBurst: 1 });
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await limits.admit("15550000001", `49151000000${i}`));
    expect(answers.slice(0, 5)).toEqual([null, null, null, null, null]);
    expect(answers[5]).toEqual(THROUGHPUT_REFUSAL);
  });

  it("counts a send whose write met a later send's count again at the time of the refusal, not as a burst", async () => {
    const t = Date.parse("2026-01-01T00:00:00Z");
    // A send at t + 1 s is counted first; then one that read the clock at t (its write waited in the database behind
    // the later one's) is refused at t, and counted again at the time of the refusal (t + 1 s): the number sent two
    // messages a second apart, well within its rate.
    const limits = createSimulatorLimits(db, clockReading(t + 1000, t, t + 1000), { throughputMps: 5, pairIntervalMs: 0, pairBurst: 1 });
    expect(await limits.admit("15550000002", "4915100000001")).toBeNull();
    expect(await limits.admit("15550000002", "4915100000002")).toBeNull();
  });

  it("still refuses a send over the limit at the time of the refusal", async () => {
    const t = Date.parse("2026-01-01T00:00:00Z");
    const clock = clockReading(t);
    const limits = createSimulatorLimits(db, clock, { throughputMps: 5, pairIntervalMs: 0, pairBurst: 1 });
    for (let i = 0; i < 5; i++) expect(await limits.admit("15550000003", `49151000000${i}`)).toBeNull();
    // Refused at t, counted again a moment later (t + 10 ms): still past the second's worth.
    const later = createSimulatorLimits(db, clockReading(t, t + 10), { throughputMps: 5, pairIntervalMs: 0, pairBurst: 1 });
    expect(await later.admit("15550000003", "4915100000009")).toEqual(THROUGHPUT_REFUSAL);
  });
});
