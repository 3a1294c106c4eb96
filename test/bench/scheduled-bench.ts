import { MongoClient } from "mongodb";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { startServiceProcess, stopProcess } from "../helpers/processes.js";
import { awaitDispatched, consoleClients, percentile, table, UPGRADED_NUMBER } from "./harness.js";

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/** Sends one key may make (its budget is 100 requests a minute). */
const SENDS_PER_KEY = 100;

/** A message as the bench reads it back. */
interface Sent {
  _id: string;
  sender_id: string;
  status: string;
  send_at?: Date | null;
  sent_at?: Date | null;
}

/**
 * Scheduled sends (README "Scheduled sends, cancellation and validity") against the simulator enforcing WhatsApp's
 * limits, through the real service in its own process (ROLE=all, as the pacing bench):
 *
 * - **idle queue**: 200 messages sent one at a time, 50 ms apart, each scheduled at its own instant, some within the queue's
 *   look-ahead (2 to 8 s ahead), some beyond it (12 to 20 s ahead, found by a later claim's look-ahead); for each,
 *   `sent_at` (when dispatch handed it to the network) − `send_at`, its p50, p99 and largest;
 * - **one instant**: `count` messages from one sender scheduled for the same instant (accepted over REST by 32
 *   clients beforehand): from `send_at` to the first sent, to the first 1% and to the last; the rate from the first
 *   to the last against the sender's rate; the network's throughput refusals (130429) meanwhile.
 */
export async function runScheduledBench(options: { mongodbUri: string; scale: number }): Promise<string> {
  const database = `bench_scheduled_${Date.now()}`;
  const service = await startServiceProcess({ MONGODB_URI: options.mongodbUri, MONGODB_DATABASE: database, CONSOLE_TOKEN, ROLE: "all" });
  const consoleUrl = `http://127.0.0.1:${service.consolePort}`;
  const client = consoleClients(consoleUrl, CONSOLE_TOKEN);
  const mongo = await new MongoClient(options.mongodbUri).connect();
  const messages = mongo.db(database).collection<Sent>("messages");
  const n = (count: number) => Math.max(20, Math.round(count * options.scale));
  /** The network's throughput refusals so far. */
  const refusals = async () => {
    const text = await (await fetch(`${consoleUrl}/metrics`)).text();
    return Number(/^msgsvc_network_refusals_total\{code="130429"\} (\S+)$/m.exec(text)?.[1] ?? 0);
  };
  try {
    const { workspace } = await client(WorkspaceService).createWorkspace({ name: "scheduled bench", credits: 1_000_000n });
    const workspaceId = workspace!.id;
    const { template } = await client(TemplateService).createTemplate({ workspaceId, name: "bench", language: "en", body: "Hello {{name}}, your code is {{code}}" });
    let keys = 0;
    /** `count` fresh keys' secrets, each for SENDS_PER_KEY sends. */
    const secrets = (count: number) =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const { secret } = await client(ApiKeyService).createApiKey({ workspaceId, name: `bench scheduled ${keys++}`, scopes: ["messages:send"], rateLimitPerMin: 100 });
          return secret;
        }),
      );
    const send = async (secret: string, body: object) => {
      const res = await fetch(`http://127.0.0.1:${service.publicPort}/v1/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`scheduled bench: a send answered ${res.status}: ${await res.text()}`);
    };
    const message = (sender: string, to: string, i: number, sendAt: Date) => ({
      to,
      sender,
      template: { id: template!.id, variables: { name: "Ada", code: String(i) } },
      send_at: sendAt.toISOString(),
    });
    /** Waits until all `count` messages of `senderId` are sent or failed (awaitDispatched: polled from an index). */
    const settled = (senderId: string, count: number, name: string) =>
      awaitDispatched(mongo.db(database), { senderIds: [senderId], count, name: `scheduled bench: ${name}`, everyMs: 500 });
    const sender = async (phoneNumber: string, throughputMps: number) =>
      (await client(SenderService).createSender({ workspaceId, phoneNumber, name: phoneNumber, throughputMps })).sender!.id;

    // Idle queue: one send at a time, 50 ms apart, each scheduled at its own instant.
    const idle = 200; // not scaled: about 30 s at any scale
    const idleSender = await sender("15550000101", 80);
    const idleKeys = await secrets(Math.ceil(idle / SENDS_PER_KEY));
    const idleRefusedBefore = await refusals();
    for (let i = 0; i < idle; i++) {
      // Even messages within the queue's look-ahead (two claim intervals, 10 s), odd ones beyond it.
      const aheadMs = i % 2 === 0 ? 2_000 + Math.random() * 6_000 : 12_000 + Math.random() * 8_000;
      await send(idleKeys[Math.floor(i / SENDS_PER_KEY)]!, message(idleSender, `4916${String(i).padStart(7, "0")}12`, i, new Date(Date.now() + aheadMs)));
      await new Promise((r) => setTimeout(r, 50));
    }
    await settled(idleSender, idle, "idle queue");
    const idleRefused = (await refusals()) - idleRefusedBefore;
    const lateness = async (senderId: string) =>
      Float64Array.from(
        (await messages.find({ sender_id: senderId, sent_at: { $ne: null } }, { projection: { send_at: 1, sent_at: 1 } }).toArray()).map(
          (m) => m.sent_at!.getTime() - m.send_at!.getTime(),
        ),
      ).sort();
    const idleLate = await lateness(idleSender);
    const idleFailed = await messages.countDocuments({ sender_id: idleSender, status: "failed" });
    const idleRows = [
      [
        `${idle} sends one at a time, each scheduled 2 to 20 s ahead at its own instant, a number at 80/s`,
        String(idleLate.length),
        String(idleFailed),
        String(idleRefused),
        percentile(idleLate, 50).toFixed(0),
        percentile(idleLate, 99).toFixed(0),
        (idleLate.at(-1) ?? NaN).toFixed(0),
        idleLate.length > 0 ? idleLate[0]!.toFixed(0) : "-",
      ],
    ];

    // One instant: `count` messages from one sender scheduled for it, accepted beforehand by 32 clients.
    const burst = n(10_000);
    const instantRows: string[][] = [];
    for (const [phoneNumber, rate] of [
      ["15550000102", 80],
      [UPGRADED_NUMBER, 1000],
    ] as const) {
      const senderId = await sender(phoneNumber, rate);
      const keysOf = await secrets(Math.ceil(burst / SENDS_PER_KEY));
      // Far enough ahead for the sends to be accepted first: about 1,000/s on a quiet machine, 50/s seen on a busy
      // one (30 ms each allowed, and 30 s).
      const sendAt = new Date(Date.now() + 30_000 + burst * 30);
      const refusedBefore = await refusals();
      let next = 0;
      const acceptStarted = Date.now();
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          for (let i = next++; i < burst; i = next++) {
            await send(keysOf[Math.floor(i / SENDS_PER_KEY)]!, message(senderId, `4917${String(i).padStart(7, "0")}12`, i, sendAt));
          }
        }),
      );
      const acceptedS = (Date.now() - acceptStarted) / 1000;
      if (Date.now() >= sendAt.getTime()) throw new Error(`scheduled bench: the sends took ${acceptedS} s, past their send_at`);
      await settled(senderId, burst, `one instant, ${phoneNumber}`);
      const refused = (await refusals()) - refusedBefore;
      const late = await lateness(senderId);
      const failed = await messages.countDocuments({ sender_id: senderId, status: "failed" });
      const at = (i: number) => late[Math.min(late.length - 1, i)]!;
      const firstS = at(0) / 1000;
      const lastS = (late.at(-1) ?? NaN) / 1000;
      const sentRate = late.length > 1 ? (late.length - 1) / (lastS - firstS) : NaN;
      instantRows.push([
        `${burst} scheduled for one instant, a number at ${rate.toLocaleString("en-US")}/s`,
        `${acceptedS.toFixed(1)} s`,
        String(late.length),
        String(failed),
        `${refused} (${((100 * refused) / burst).toFixed(2)} %)`,
        firstS.toFixed(2),
        (at(Math.ceil(late.length / 100) - 1) / 1000).toFixed(2),
        lastS.toFixed(1),
        sentRate.toFixed(1),
        `${((100 * sentRate) / rate).toFixed(0)} %`,
      ]);
    }
    return [
      "Scheduled sends against the simulator's limits, ROLE=all, one process: sent_at (handed to the network) − send_at",
      "",
      table(["idle queue", "sent", "failed", "130429 refusals", "p50 ms", "p99 ms", "max ms", "min ms"], idleRows),
      "",
      table(
        ["one instant", "accepted in", "sent", "failed", "130429 refusals", "first sent s", "first 1% s", "last s", "sent/s first to last", "of the sender's rate"],
        instantRows,
      ),
    ].join("\n");
  } finally {
    await mongo.close();
    await stopProcess(service.child);
  }
}
