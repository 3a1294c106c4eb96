import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { rest } from "./helpers/clients.js";
import { startServiceProcess, stopProcess } from "./helpers/processes.js";
import { answerOk, answerStatus, startReceiver, type Receiver } from "./helpers/receivers.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * Retries run in worker processes (ROLE=worker, src/main.ts as a child
 * process); this suite's own service has ROLE=api: it publishes the events
 * and makes the first attempt and the immediate retry, then leaves the
 * rest, due at their times, to the workers' claims.
 */

const settings = {
  webhookAllowHttpLoopback: true,
  webhookAllowPrivateTargets: true,
  webhookRetrySchedule: [0, 200, 200, 200, 200, 200, 200],
  webhookAttemptTimeoutMs: 1500,
  webhookLeaseMs: 3100,
  jobPollIntervalMs: 100,
  webhookClaimIntervalMs: 300,
};

let t: TestService;
let receiver: Receiver;
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = await createTestService({ config: { ...settings, role: "api" } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await Promise.all(children.map(stopProcess));
  await t.close();
  await receiver.close();
});

function startWorker() {
  return startServiceProcess({
    MONGODB_URI: inject("mongoUri"),
    MONGODB_DATABASE: t.databaseName,
    ROLE: "worker",
    WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE: settings.webhookRetrySchedule.map((ms) => `${ms}ms`).join(","),
    WEBHOOK_ATTEMPT_TIMEOUT_MS: String(settings.webhookAttemptTimeoutMs),
    WEBHOOK_LEASE_MS: String(settings.webhookLeaseMs),
    JOB_POLL_INTERVAL_MS: String(settings.jobPollIntervalMs),
    WEBHOOK_CLAIM_INTERVAL_MS: String(settings.webhookClaimIntervalMs),
  }).then((worker) => {
    children.push(worker.child);
    return worker;
  });
}

const consoleRest = (method: string, path: string, body?: unknown) => rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });

async function newEndpoint(): Promise<{ workspaceId: string; endpointId: string }> {
  const workspaceId = await t.createWorkspace();
  const res = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/webhook_endpoints`, { name: "w", url: receiver.url, events: ["message.sent"] });
  return { workspaceId, endpointId: res.json.webhook_endpoint.id };
}

/** Answers by the position of the request among those of its event (Service-Delivery). */
function perEvent(answer: (nth: number, res: ServerResponse) => void) {
  const seen = new Map<string, number>();
  receiver.behave((req, res) => {
    const id = req.headers["service-delivery"] as string;
    const nth = (seen.get(id) ?? 0) + 1;
    seen.set(id, nth);
    answer(nth, res);
  });
}

/** Every delivery of the endpoint (REST JSON) once all of them succeeded. */
const allSucceeded = (endpointId: string, count: number) =>
  eventually(async () => {
    const res = await consoleRest("GET", `/console/v1/deliveries?endpoint_id=${endpointId}&page_size=100`);
    const data = res.json.data as { id: string; event_id: string; status: string }[];
    return data.length === count && data.every((d) => d.status === "succeeded") ? data : undefined;
  }, 25_000);

/** The attempts of a delivery, oldest first. */
const attemptsOf = async (deliveryId: string) =>
  ((await consoleRest("GET", `/console/v1/deliveries/${deliveryId}/attempts`)).json.data as { number: number; error_kind: string | null; succeeded: boolean }[]).reverse();

describe("worker processes (outbox, sweep, claims)", () => {
  it("loses nothing when a worker is killed in the middle of attempts: the next worker finishes them", async () => {
    const { workspaceId, endpointId } = await newEndpoint();
    const held: ServerResponse[] = [];
    // Attempts 1 and 2 (this process) fail; attempt 3 (a worker) is held unanswered; later ones succeed.
    perEvent((nth, res) => {
      if (nth <= 2) answerStatus(500)({} as never, res, nth);
      else if (nth === 3) held.push(res);
      else answerOk({} as never, res, nth);
    });
    const first = await startWorker();
    const events = await Promise.all(Array.from({ length: 5 }, (_, i) => t.service.events.publish({ workspaceId, type: "message.sent", data: { n: i } })));
    await eventually(async () => (held.length === 5 ? true : undefined), 15_000);

    first.child.kill("SIGKILL");
    await once(first.child, "exit");
    for (const res of held) res.socket?.destroy();
    await startWorker();

    const deliveries = await allSucceeded(endpointId, 5);
    for (const delivery of deliveries) {
      const attempts = await attemptsOf(delivery.id);
      expect(attempts.map((a) => [a.number, a.error_kind, a.succeeded])).toEqual([
        [1, "http_status", false],
        [2, "http_status", false],
        [3, "interrupted", false],
        [4, null, true],
      ]);
      // The receiver saw each attempt once: the interrupted one was not made again.
      expect(receiver.requests.filter((r) => r.headers["service-delivery"] === delivery.event_id)).toHaveLength(4);
    }
    expect(new Set(deliveries.map((d) => d.event_id))).toEqual(new Set(events.map((e) => e._id)));
  }, 60_000);

  it("keeps an endpoint's rate limit across two workers, one of them stopping midway, and loses nothing", async () => {
    const { workspaceId, endpointId } = await newEndpoint();
    const limited = await consoleRest("PATCH", `/console/v1/webhook_endpoints/${endpointId}?update_mask=rate_limit`, { rate_limit: 4 });
    expect(limited.json.rate_limit).toBe(4);
    receiver.behave(answerOk);
    const [first] = await Promise.all([startWorker(), startWorker()]);
    // This process can hold an attempt 50 ms at most (lease 3,100 ms, deadline 1,500 ms): nearly every attempt
    // goes back to the database with its slot, and the workers send them.
    const events: { _id: string }[] = [];
    for (let i = 0; i < 16; i++) events.push(await t.service.events.publish({ workspaceId, type: "message.sent", data: { n: i } }));
    await eventually(async () => (receiver.requests.filter((r) => events.some((e) => e._id === r.headers["service-delivery"])).length >= 4 ? true : undefined), 15_000);
    await stopProcess(first.child);

    const deliveries = await allSucceeded(endpointId, 16);
    for (const delivery of deliveries) {
      // No attempt was lost with the stopped worker (none interrupted), none was made twice.
      expect((await attemptsOf(delivery.id)).map((a) => [a.number, a.error_kind, a.succeeded])).toEqual([[1, null, true]]);
    }
    const windows = await t.service.db.collection("rate_windows").find({ subject: `webhook:${endpointId}` }).toArray();
    expect(windows.every((w) => w.count <= 4)).toBe(true);
    expect(windows.reduce((sum, w) => sum + w.count, 0)).toBeGreaterThanOrEqual(16);
    const arrivals = receiver.requests.filter((r) => events.some((e) => e._id === r.headers["service-delivery"]));
    expect(arrivals).toHaveLength(16);
    expect(arrivals.at(-1)!.at - arrivals[0]!.at).toBeGreaterThanOrEqual(2000); // four windows at least
  }, 60_000);

  it("never makes the same attempt twice with two workers claiming the same due deliveries", async () => {
    await startWorker();
    // Slow answers widen the races: three failures, then success.
    perEvent((nth, res) => setTimeout(() => (nth <= 3 ? answerStatus(500) : answerOk)({} as never, res, nth), 30));
    // Waves of five events, each to its own endpoint (fifteen failures: fewer than the twenty that disable it),
    // their retries due at the same times: both workers' claims find them.
    const waves = [];
    for (let wave = 0; wave < 4; wave++) {
      const { workspaceId, endpointId } = await newEndpoint();
      await Promise.all(Array.from({ length: 5 }, (_, i) => t.service.events.publish({ workspaceId, type: "message.sent", data: { wave, i } })));
      waves.push(endpointId);
    }
    for (const endpointId of waves) {
      for (const delivery of await allSucceeded(endpointId, 5)) {
        const attempts = await attemptsOf(delivery.id);
        expect(attempts.map((a) => a.number)).toEqual([1, 2, 3, 4]);
        expect(receiver.requests.filter((r) => r.headers["service-delivery"] === delivery.event_id)).toHaveLength(4);
      }
    }
  }, 60_000);

  it("claims through a recurring Agenda job of each worker's own, removed when it stops or, left by a killed worker, an hour later", async () => {
    const jobs = t.service.db.collection<{ name: string; nextRunAt: Date | null; lastRunAt?: Date }>("jobs");
    const claimJobs = async () => (await jobs.find({ name: { $regex: "^webhooks\\.claim:" } }).toArray()).map((j) => j.name);
    const before = new Set(await claimJobs());
    const own = async () => (await claimJobs()).filter((name) => !before.has(name));

    const first = await startWorker();
    const [firstJob] = await own();
    expect(firstJob).toMatch(/^webhooks\.claim:/);
    // It runs every WEBHOOK_CLAIM_INTERVAL_MS (300 ms).
    const runs = new Set<number>();
    await eventually(async () => {
      const job = await jobs.findOne({ name: firstJob });
      if (job?.lastRunAt) runs.add(job.lastRunAt.getTime());
      return runs.size >= 3 ? true : undefined;
    }, 10_000);
    expect((await jobs.findOne({ name: firstJob }))?.nextRunAt).toBeInstanceOf(Date);

    // Killed, its job stays; an hour overdue, the next worker to start removes it.
    first.child.kill("SIGKILL");
    await once(first.child, "exit");
    await jobs.updateOne({ name: firstJob }, { $set: { nextRunAt: new Date(Date.now() - 3_700_000) } });
    const second = await startWorker();
    const names = await own();
    expect(names).not.toContain(firstJob);
    expect(names).toHaveLength(1);

    // Stopped, a worker removes its own.
    await stopProcess(second.child);
    expect(second.child.exitCode).toBe(0);
    const left = await jobs.find({ name: { $in: await own() } }).toArray();
    expect(left, JSON.stringify(left)).toEqual([]);
  }, 60_000);
});
