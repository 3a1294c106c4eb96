import http from "node:http";
import { randomUUID } from "node:crypto";
import { loadConfig } from "../../src/config.js";
import { startService } from "../../src/server.js";
import { createLogger } from "../../src/shared/logger.js";

/*
 * The service process of the webhook benchmark (test/bench/webhook-bench.ts):
 * the service (ROLE=all, configured from the environment) and, standing in
 * for the messaging capability, a publisher loop that calls the event bus
 * as a network report does. Its memory and CPU are the service's, apart
 * from the benchmark's receivers, command counting and bare loop, which run
 * in other processes.
 *
 * Control (JSON over HTTP on a loopback port, printed on the first line as
 * {"controlPort","consolePort"}):
 * - POST /endpoints [{workspaceId}]: the workspaces events are published to, in turn;
 * - POST /publish {perSecond} or {publishers}, with {seconds}: publishes at a
 *   steady rate, or from that many loops each as fast as it goes, and answers
 *   {sent} when done; without seconds it goes on until POST /stop, which answers {sent}.
 */

const config = loadConfig(process.env);
if (!config.mongodbUri) throw new Error("MONGODB_URI must be set");
const service = await startService({ config: { ...config, mongodbUri: config.mongodbUri }, logger: createLogger(config.logLevel) });

let workspaces: string[] = [];
let n = 0;
const publish = () => {
  const workspaceId = workspaces[n++ % workspaces.length]!;
  return service.events.publish({
    workspaceId,
    type: "message.delivered",
    data: {
      message_id: `msg_${randomUUID()}`,
      to: "4915112345678",
      status: "delivered",
      wa_message_id: `wamid.${n}`,
      occurred_at: new Date().toISOString(),
      error: null,
      sent_ns: String(process.hrtime.bigint()),
    },
  });
};

let stopping: (() => void) | undefined;

/** Publishes until `seconds` passed or POST /stop; resolves to the count of events published. */
async function run(o: { perSecond?: number; publishers?: number; seconds?: number }): Promise<number> {
  const began = performance.now();
  let stopped = false;
  const stop = new Promise<void>((resolve) => (stopping = resolve)).then(() => void (stopped = true));
  const until = () => stopped || (o.seconds !== undefined && performance.now() - began >= o.seconds * 1000);
  let sent = 0;
  if (o.publishers) {
    await Promise.all(
      Array.from({ length: o.publishers }, async () => {
        while (!until()) {
          await publish();
          sent++;
        }
      }),
    );
    return sent;
  }
  const perSecond = o.perSecond ?? 100;
  const pending: Promise<unknown>[] = [];
  while (!until()) {
    const wait = began + (sent * 1000) / perSecond - performance.now();
    if (wait > 0) await Promise.race([new Promise((resolve) => setTimeout(resolve, wait)), stop]);
    if (until()) break;
    pending.push(publish());
    sent++;
  }
  await Promise.all(pending);
  return sent;
}

const control = http.createServer((req, res) => {
  let text = "";
  req.on("data", (chunk: Buffer) => (text += chunk.toString()));
  req.on("end", () => {
    const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    const answer = (value: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(value));
    if (req.url === "/endpoints") {
      workspaces = (body as unknown as { workspaceId: string }[]).map((e) => e.workspaceId);
      answer({});
    } else if (req.url === "/publish") {
      run(body).then((sent) => answer({ sent }), (err: Error) => res.writeHead(500).end(err.message));
    } else if (req.url === "/stop") {
      stopping?.();
      answer({});
    } else {
      res.writeHead(404).end();
    }
  });
});
control.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ controlPort: (control.address() as { port: number }).port, consolePort: service.consolePort }));
});

const shutdown = () => {
  control.close();
  service.close().then(() => process.exit(0), () => process.exit(1));
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
