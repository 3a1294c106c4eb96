import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { MongoClient, type Db } from "mongodb";
import { MessagingLimitBudget } from "../src/messages/messaging-limit.js";
import { createTestClock } from "./helpers/test-service.js";

/*
 * The messaging limit's count on its own (no service started): a real
 * database of the run, the injectable clock, and budgets standing for
 * processes that share the database. The service end to end (console field,
 * queued_reason daily_limit over REST and gRPC) is in test/pacing.test.ts.
 */

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
  db = client.db(`test_limit_${randomUUID().replaceAll("-", "").slice(0, 12)}`);
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

const HOUR = 3_600_000;

describe("the messaging limit: unique recipients in a moving 24 hours", () => {
  it("lets the limit's recipients through, then again those it counted, and holds a new one until the oldest hour leaves", async () => {
    const clock = createTestClock(new Date("2026-11-23T10:20:00.000Z"));
    const budget = new MessagingLimitBudget(db, clock);
    const ws = randomUUID();
    for (const to of ["491", "492", "493"]) expect(await budget.turn(ws, 3, to)).toEqual({ go: true });
    // Again to counted recipients: no count.
    expect(await budget.turn(ws, 3, "492")).toEqual({ go: true });
    // A new one: full until the end of the hour of the first counts (10:00-11:00) plus 24 hours.
    expect(await budget.turn(ws, 3, "494")).toEqual({ go: false, at: new Date("2026-11-24T11:00:00.000Z") });
    expect(await budget.inWindow(ws)).toBe(3);
    // Another workspace has its own window; an unlimited one counts nothing.
    expect(await budget.turn(randomUUID(), 3, "494")).toEqual({ go: true });
    expect(await budget.turn(ws, Infinity, "495")).toEqual({ go: true });
    expect(await budget.inWindow(ws)).toBe(3);

    // Two hours on, 492 is written again: its window starts again (moved to this hour).
    clock.advance(2 * HOUR);
    expect(await budget.turn(ws, 3, "492")).toEqual({ go: true });
    // At 11:00 the next day, the first hour leaves: 491 and 493 are out, 492 still in.
    clock.set(new Date("2026-11-24T11:00:00.000Z"));
    expect(await budget.inWindow(ws)).toBe(1);
    expect(await budget.turn(ws, 3, "494")).toEqual({ go: true });
    expect(await budget.turn(ws, 3, "491")).toEqual({ go: true });
    // Full again: until 492 leaves, counted last in the hour 12:00-13:00.
    expect(await budget.turn(ws, 3, "496")).toEqual({ go: false, at: new Date("2026-11-24T13:00:00.000Z") });
    expect(await budget.inWindow(ws)).toBe(3);
  });

  it("holds in total across processes racing for the same window, each recipient counted once", async () => {
    const clock = createTestClock();
    const processes = [new MessagingLimitBudget(db, clock), new MessagingLimitBudget(db, clock), new MessagingLimitBudget(db, clock)];
    const ws = randomUUID();
    // 60 recipients, each asked for by every process at once; a limit of 25.
    const recipients = Array.from({ length: 60 }, (_, i) => `4917${String(i).padStart(6, "0")}`);
    const turns = await Promise.all(recipients.flatMap((to) => processes.map(async (p) => ({ to, turn: await p.turn(ws, 25, to) }))));
    const through = new Set(turns.filter((t) => t.turn.go).map((t) => t.to));
    expect(through.size).toBeLessThanOrEqual(25);
    expect(through.size).toBeGreaterThan(0);
    expect(await recorded(ws)).toBe(through.size);
    expect(await processes[0]!.inWindow(ws)).toBe(through.size);
    // Then one at a time: those through stay through, the window fills to exactly 25, the rest are held.
    for (const to of recipients) {
      const turn = await processes[1]!.turn(ws, 25, to);
      if (through.has(to)) expect(turn.go).toBe(true);
      if (turn.go) through.add(to);
    }
    expect(through.size).toBe(25);
    expect(await recorded(ws)).toBe(25);
    expect(await processes[2]!.inWindow(ws)).toBe(25);
  });
});

/** The recipients recorded for `ws`. */
function recorded(ws: string): Promise<number> {
  return db.collection("messaging_limit_recipients").countDocuments({ workspace_id: ws });
}
