import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { MongoClient, type Db } from "mongodb";
import { Pacer } from "../src/messages/pacing.js";
import { createRateLimiter } from "../src/ratelimit/rate-limiter.js";
import { Throttle } from "../src/ratelimit/throttle.js";
import { createTestClock } from "./helpers/test-service.js";

/*
 * The adaptive rate of a sender number on its own (README "Pacing"): the
 * pacer over the shared throttle and a real database of the run, the
 * injectable clock; the rate each turn asks the throttle for is read as it
 * goes by (at 95% of the sender's rate, the pacer's headroom).
 */

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
  db = client.db(`test_pacer_${randomUUID().replaceAll("-", "").slice(0, 12)}`);
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

/**
 * A pacer over the shared throttle with the injectable clock, and a sender configured at 80/s; `rate` reads the
 * sender's rate now, as its next turn asks for it (less the 5% headroom), in messages per second.
 */
function pacedSender() {
  const clock = createTestClock();
  const throttle = new Throttle({ limiter: createRateLimiter(db, clock, 1000), clock, holdMs: 3500, keepSlots: false });
  const asked: number[] = [];
  const turn = throttle.turn.bind(throttle);
  throttle.turn = (subject, limit, slot) => (asked.push(limit), turn(subject, limit, slot));
  const pacer = new Pacer({ throttle, clock, options: { pairIntervalMs: 0, pairBurst: 1, holdMs: 3500 } });
  const sender = `snd_${randomUUID()}`;
  const rate = async () => {
    clock.advance(1); // a turn per millisecond at most: each asks anew
    await pacer.turn({ senderId: sender, throughputMps: 80, to: "4915100000001" });
    return Math.round((asked.at(-1)! / 0.95) * 100) / 100;
  };
  return { clock, pacer, sender, rate };
}

describe("a sender's adaptive rate (AIMD)", () => {
  it("lowers it by a quarter on a refusal, regains quickly below the rate refused and slowly above, and forgets that rate after 30 s", async () => {
    const { clock, pacer, sender, rate } = pacedSender();

    expect(await rate()).toBe(80);
    pacer.throughputRefused(sender, clock.now());
    expect(await rate()).toBeCloseTo(60, 0);
    // A refusal of a message handed over before the decrease, or within a second of it, changes nothing...
    pacer.throughputRefused(sender, new Date(clock.now().getTime() - 10));
    pacer.throughputRefused(sender, clock.now());
    expect(await rate()).toBeCloseTo(60, 0);
    // ...but the rate grows only from a second after the last refusal: none for this second.
    clock.advance(1000);
    expect(await rate()).toBeCloseTo(60, 0);
    // Then 8/s (10% of 80) up to 95% of the rate refused (76), then 0.16/s (0.2%).
    clock.advance(1000);
    expect(await rate()).toBeCloseTo(68, 0);
    clock.advance(1000);
    expect(await rate()).toBeCloseTo(76, 0);
    clock.advance(5000);
    expect(await rate()).toBeLessThan(77.5);
    // A second refusal at that rate: a quarter off again, and the rate refused is the new ceiling.
    clock.advance(1000);
    pacer.throughputRefused(sender, clock.now());
    const lowered = await rate();
    expect(lowered).toBeLessThan(59);
    clock.advance(10_000);
    // 10 s on: after a second, quickly to 95% of the rate refused (about 73), then slowly.
    const refusedAt = lowered / 0.75;
    const quickSeconds = (0.95 * refusedAt - lowered) / 8;
    expect(await rate()).toBeCloseTo(0.95 * refusedAt + (10 - 1 - quickSeconds) * 0.16, 0);
    // Refusals that keep coming (a stalled process handing bunches over) each lower the ceiling: a ratchet...
    for (let i = 0; i < 4; i++) {
      clock.advance(1500);
      await rate();
      pacer.throughputRefused(sender, clock.now());
    }
    clock.advance(29_000);
    const held = await rate();
    expect(held).toBeLessThan(65);
    // ...that lasts 30 s: then the rate refused is forgotten and the rate regains quickly (8/s), up to 95% of 80.
    clock.advance(2000);
    expect(await rate()).toBeGreaterThan(held + 12);
    clock.advance(5000);
    expect(await rate()).toBeCloseTo(76, 0);
  });

  it("never lowers it below the rate at which the network took the sender's messages over the last 3 s (late refusals)", async () => {
    const { clock, pacer, sender, rate } = pacedSender();
    /** The network takes `perSecond` of the sender's messages a second for `seconds`, evenly. */
    const took = (perSecond: number, seconds: number) => {
      for (let i = 0; i < perSecond * seconds; i++) {
        clock.advance(1000 / perSecond);
        pacer.taken(sender);
      }
    };

    expect(await rate()).toBe(80);
    // The network took 72 a second over the last 3 s: a refusal lowers the rate to 72, not by a quarter (60).
    took(72, 3);
    pacer.throughputRefused(sender, clock.now());
    expect(await rate()).toBeCloseTo(72, 0);
    // Refusals that keep coming while it takes 66 a second: 66, not 54.
    took(66, 3);
    pacer.throughputRefused(sender, clock.now());
    expect(await rate()).toBeCloseTo(66, 0);
    // A stall: nothing taken for half a second, then a refusal; the 3 s still count the 2.5 s before it (63 a second),
    // more than the quarter off would leave.
    took(76, 2.5);
    clock.advance(500);
    const stalled = await rate();
    expect(0.75 * stalled).toBeLessThan(60);
    pacer.throughputRefused(sender, clock.now());
    expect(await rate()).toBeCloseTo((76 * 2.5) / 3, 0);
    // When it took little over 3 s (a number held far lower), the quarter applies.
    took(10, 3);
    const before = await rate();
    pacer.throughputRefused(sender, clock.now());
    expect(await rate()).toBeCloseTo(0.75 * before, 0);
  });
});

describe("the hand-over to the network (after the claim's write)", () => {
  it("spaces messages handed over at once at the sender's rate, half a second's worth at once, in order, never past the longest wait", async () => {
    const { clock, pacer, sender, rate } = pacedSender();
    /** The waits of `count` messages handed over at the same instant, in whole ms. */
    const handed = (count: number, maxWaitMs = 5_000) => Array.from({ length: count }, () => pacer.handOver(sender, maxWaitMs));
    const step = 1000 / 80;

    // A sender without a turn in this process goes at once.
    expect(pacer.handOver(`snd_${randomUUID()}`, 5_000)).toBe(0);
    expect(await rate()).toBe(80);
    // Two seconds of turns at once (a claim's write held up): the first half second's worth (40, and the one the
    // bucket ends on) at once, then one per 1/80 s in the order asked.
    const waits = handed(160);
    expect(waits.slice(0, 41)).toEqual(Array(41).fill(0));
    waits.slice(41).forEach((wait, i) => expect(wait).toBe(Math.round((i + 1) * step)));
    // The next message waits behind them all; once they went, a message goes at once again.
    expect(pacer.handOver(sender, 5_000)).toBe(120 * step);
    clock.advance(121 * step + 1000);
    expect(pacer.handOver(sender, 5_000)).toBe(0);

    // At the rate a refusal lowered: the network took nothing lately, so by a quarter, to 60 a second.
    clock.advance(3_000);
    pacer.throughputRefused(sender, clock.now());
    expect(await rate()).toBe(60);
    clock.advance(500); // within the second after the refusal: not regained yet
    const lowered = handed(40);
    expect(lowered.slice(0, 31)).toEqual(Array(31).fill(0));
    lowered.slice(31).forEach((wait, i) => expect(Math.abs(wait - (i + 1) * (1000 / 60))).toBeLessThanOrEqual(0.5));

    // Never longer than the longest wait given (the claim is held meanwhile).
    clock.advance(10_000);
    expect(Math.max(...handed(200, 300))).toBe(300);
  });
});
