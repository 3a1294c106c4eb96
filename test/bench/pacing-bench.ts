import { MongoClient } from "mongodb";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { startServiceProcess, stopProcess } from "../helpers/processes.js";
import { awaitDispatched, consoleClients, table } from "./harness.js";

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/** One campaign: `count` messages from each of its senders, each sender created with `throughputMps`. */
interface Campaign {
  name: string;
  /** The senders' phone numbers (the simulator holds numbers ending in 0020 at 20/s, in 1000 at 1,000/s). */
  senders: string[];
  throughputMps: number;
  /** What the network allows each sender, messages per second (the simulator's rule for its number). */
  networkMps: number;
  count: number;
  /** One recipient for all (the pair rate), else one each. */
  oneRecipient?: boolean;
}

/**
 * Campaigns against the simulator enforcing WhatsApp's limits (SIMULATOR_LIMITS, on by default: a number's
 * throughput with 130429, the pair rate with 131056), through the real service in its own process (ROLE=all):
 * each campaign's messages are accepted by batch sends, then dispatch paces them (README "Pacing"). For each:
 * the network's refusals (from /metrics, by code), the rate from the first message the network took to the last
 * (sent_at, read from the database) against what the network allows, the rate from the moment all were accepted to
 * the last (the pacing without the acceptance's share of the machine), and, for a number held lower than its
 * configured rate, the refusals after the first 15 s (once the rate converged).
 */
export async function runPacingBench(options: { mongodbUri: string; scale: number; campaigns?: string }): Promise<string> {
  const database = `bench_pacing_${Date.now()}`;
  const service = await startServiceProcess({ MONGODB_URI: options.mongodbUri, MONGODB_DATABASE: database, CONSOLE_TOKEN, ROLE: "all" });
  const consoleUrl = `http://127.0.0.1:${service.consolePort}`;
  const client = consoleClients(consoleUrl, CONSOLE_TOKEN);
  const mongo = await new MongoClient(options.mongodbUri).connect();
  const messages = mongo.db(database).collection<{ _id: string; sender_id: string; status: string; sent_at?: Date | null }>("messages");
  const n = (count: number) => Math.max(20, Math.round(count * options.scale));
  const campaigns: Campaign[] = [
    { name: "one number at 80/s", senders: ["15550000001"], throughputMps: 80, networkMps: 80, count: n(10_000) },
    { name: "one upgraded number at 1,000/s", senders: ["15550001000"], throughputMps: 1000, networkMps: 1000, count: n(10_000) },
    { name: "one number held at 20/s, configured at 80/s", senders: ["15550010020"], throughputMps: 80, networkMps: 20, count: n(2_000) },
    { name: "20 messages to one recipient", senders: ["15550000002"], throughputMps: 80, networkMps: 80, count: 20, oneRecipient: true },
    {
      name: "ten numbers at 20/s at once",
      senders: Array.from({ length: 10 }, (_, i) => `155500${String(i + 2).padStart(2, "0")}0020`),
      throughputMps: 20,
      networkMps: 20,
      count: n(600),
    },
  ].filter((c) => !options.campaigns || options.campaigns.split(",").some((part) => c.name.includes(part)));
  /**
   * The network's refusals so far, by code, from the service's /metrics: read at a campaign's start, 15 s in and its
   * end only, for a scrape also counts every sender's queue in the database (msgsvc_sender_queue_depth), which the
   * embedded database does by scanning the messages.
   */
  const refusals = async () => {
    const text = await (await fetch(`${consoleUrl}/metrics`)).text();
    const counts = new Map<string, number>();
    for (const [, code, value] of text.matchAll(/^msgsvc_network_refusals_total\{code="(\d+)"\} (\S+)$/gm)) counts.set(code!, Number(value));
    return counts;
  };
  try {
    const { workspace } = await client(WorkspaceService).createWorkspace({ name: "pacing bench", credits: 1_000_000n });
    const workspaceId = workspace!.id;
    const { template } = await client(TemplateService).createTemplate({ workspaceId, name: "bench", language: "en", body: "Hello {{name}}, your code is {{code}}" });
    const rows: string[][] = [];
    /** Lines under the table (each sender of a campaign of several). */
    const details: string[] = [];
    for (const campaign of campaigns) {
      const senderIds = await Promise.all(
        campaign.senders.map(async (phoneNumber) => (await client(SenderService).createSender({ workspaceId, phoneNumber, name: phoneNumber, throughputMps: campaign.throughputMps })).sender!.id),
      );
      const before = await refusals();
      // The senders' messages interleaved: every batch carries each sender's share, so that the senders of a campaign
      // start together (one after the other, the last began seconds after the first).
      const items = Array.from({ length: campaign.count }, (_, i) =>
        senderIds.map((sender, s) => ({
          // Ending in 12: never one of the simulator's test numbers (9990 to 9999), which fail or lose receipts.
          to: campaign.oneRecipient ? "4915190000012" : `4915${String(s).padStart(2, "0")}${String(i).padStart(6, "0")}12`,
          sender,
          template: { id: template!.id, variables: { name: "Ada", code: String(i) } },
        })),
      ).flat();
      const started = Date.now();
      // 1,000 items a request, a key per 90 requests (each key's budget is 100 a minute).
      for (let at = 0, k = 0; at < items.length; k++) {
        const { secret } = await client(ApiKeyService).createApiKey({ workspaceId, name: `bench ${campaign.name} ${k}`, scopes: ["messages:send"], rateLimitPerMin: 100 });
        for (let r = 0; r < 90 && at < items.length; r++, at += 1000) {
          const res = await fetch(`http://127.0.0.1:${service.publicPort}/v1/messages:batch`, {
            method: "POST",
            headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
            body: JSON.stringify({ messages: items.slice(at, at + 1000) }),
          });
          if (res.status !== 200) throw new Error(`pacing bench: a batch answered ${res.status}: ${await res.text()}`);
        }
      }
      const accepted = Date.now();
      const mine = { sender_id: { $in: senderIds } };
      let convergedAt: Map<string, number> | undefined;
      let sentAtConvergence = 0;
      // Polled once a second from an index (countDone): a scan would share the database's time with the pacing.
      await awaitDispatched(mongo.db(database), {
        senderIds,
        count: items.length,
        name: `pacing bench: ${campaign.name}`,
        everyMs: 1000,
        each: async (done) => {
          if (convergedAt || Date.now() - started <= 15_000) return;
          convergedAt = await refusals();
          sentAtConvergence = done;
        },
      });
      const after = await refusals();
      const total = items.length;
      const refused = (code: string, since = before) => (after.get(code) ?? 0) - (since.get(code) ?? 0);
      const sent = await messages.find({ ...mine, sent_at: { $ne: null } }, { projection: { sent_at: 1, sender_id: 1 } }).toArray();
      const times = sent.map((m) => m.sent_at!.getTime()).sort((a, b) => a - b);
      if (senderIds.length > 1) {
        // Each sender on its own: its rate first to last, and the most it sent in any one second (sliding).
        const each = senderIds.map((id) => {
          const own = sent.filter((m) => m.sender_id === id).map((m) => m.sent_at!.getTime()).sort((a, b) => a - b);
          let most = 0;
          for (let i = 0, j = 0; i < own.length; i++) {
            while (own[i]! - own[j]! >= 1000) j++;
            most = Math.max(most, i - j + 1);
          }
          return { rate: own.length > 1 ? (own.length - 1) / ((own.at(-1)! - own[0]!) / 1000) : NaN, most };
        });
        const rates = each.map((e) => e.rate);
        details.push(
          `${campaign.name}: each sender first to last ${Math.min(...rates).toFixed(1)} to ${Math.max(...rates).toFixed(1)}/s; the most one sent in any second (sliding) ${Math.min(...each.map((e) => e.most))} to ${Math.max(...each.map((e) => e.most))} (the network allows ${campaign.networkMps} a second, and a second's worth at once)`,
        );
      }
      const failed = await messages.countDocuments({ ...mine, status: "failed" });
      if (failed > 0) {
        const why = await messages.aggregate<{ _id: string; n: number }>([{ $match: { ...mine, status: "failed" } }, { $group: { _id: "$error.title", n: { $sum: 1 } } }]).toArray();
        details.push(`${campaign.name}: failed ${why.map((w) => `${w.n} "${w._id}"`).join(", ")}`);
      }
      const spanS = times.length > 1 ? (times.at(-1)! - times[0]!) / 1000 : 0;
      const rate = spanS > 0 ? (times.length - 1) / spanS : Infinity;
      const allowed = campaign.networkMps * campaign.senders.length;
      // From the moment every message was accepted to the last sent: the pacing alone, without the acceptance's
      // share of the machine (a batch's thousand messages take the service's CPU for a while).
      const sentSince = times.filter((t) => t > accepted).length;
      const rateOnceAccepted = times.length > 0 && times.at(-1)! - accepted > 1000 ? sentSince / ((times.at(-1)! - accepted) / 1000) : NaN;
      const afterConvergence = convergedAt && total - sentAtConvergence > 0 ? `${((100 * refused("130429", convergedAt)) / (total - sentAtConvergence)).toFixed(2)} %` : "-";
      rows.push([
        campaign.name,
        String(total),
        `${refused("130429")} (${((100 * refused("130429")) / total).toFixed(2)} %)`,
        afterConvergence,
        String(refused("131056")),
        String(failed),
        spanS.toFixed(1),
        Number.isFinite(rate) ? rate.toFixed(1) : "-",
        `${allowed}`,
        Number.isFinite(rate) && !campaign.oneRecipient ? `${((100 * rate) / allowed).toFixed(0)} %` : "-",
        `${((accepted - started) / 1000).toFixed(1)}`,
        Number.isFinite(rateOnceAccepted) && !campaign.oneRecipient ? `${rateOnceAccepted.toFixed(1)} (${((100 * rateOnceAccepted) / allowed).toFixed(0)} %)` : "-",
      ]);
    }
    return `Pacing against the simulator's limits (WhatsApp's: 130429 throughput, 131056 pair rate), ROLE=all, one process\n\n${table(
      ["campaign", "messages", "130429 refusals", "130429 after 15 s", "131056 refusals", "failed", "first to last sent s", "sent/s", "network allows/s", "of allowed", "accepted in s", "sent/s once all accepted"],
      rows,
    )}${details.map((d) => `\n${d}`).join("")}`;
  } finally {
    await mongo.close();
    await stopProcess(service.child);
  }
}
