import http from "node:http";
import type net from "node:net";
import { verifyWebhookSignature } from "../../src/webhooks/signature.js";

/*
 * Webhook receivers for the benchmark, in their own process: `RECEIVERS`
 * ports answering 200 at once after checking the signature with the
 * endpoint's secret (set through POST /control/secrets on any port). For
 * events whose data carries `sent_ns` (process.hrtime.bigint() in the
 * publishing process; the same monotonic clock on this machine), the
 * latency from publication to arrival is kept. GET /control/stats answers
 * the counts and latencies and starts afresh. Prints its ports as one JSON
 * line.
 */
const count = Number(process.env.RECEIVERS ?? "4");
const secrets = new Map<number, string>();
let stats = { received: 0, badSignatures: 0, backlog: 0, firstNs: 0n, lastNs: 0n, latenciesMs: [] as number[] };

function control(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  if (req.url === "/control/secrets") {
    for (const [port, secret] of Object.entries(JSON.parse(body) as Record<string, string>)) secrets.set(Number(port), secret);
    res.end("{}");
    return;
  }
  const out = { ...stats, firstNs: String(stats.firstNs), lastNs: String(stats.lastNs) };
  stats = { received: 0, badSignatures: 0, backlog: 0, firstNs: 0n, lastNs: 0n, latenciesMs: [] };
  res.end(JSON.stringify(out));
}

function receive(port: number, req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  const now = process.hrtime.bigint();
  try {
    verifyWebhookSignature(body, req.headers["service-signature"] as string, secrets.get(port) ?? "");
  } catch {
    stats.badSignatures++;
  }
  const data = (JSON.parse(body) as { data: { sent_ns?: string; backlog?: boolean } }).data;
  stats.received++;
  if (stats.firstNs === 0n) stats.firstNs = now;
  stats.lastNs = now;
  if (data.backlog) stats.backlog++;
  if (data.sent_ns) stats.latenciesMs.push(Number(now - BigInt(data.sent_ns)) / 1e6);
  res.writeHead(200, { "content-type": "application/json", "content-length": "2" });
  res.end("{}");
}

const ports: number[] = [];
for (let i = 0; i < count; i++) {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const port = (server.address() as net.AddressInfo).port;
      if (req.url?.startsWith("/control/")) control(req, res, body);
      else receive(port, req, res, body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  ports.push((server.address() as net.AddressInfo).port);
}
process.stdout.write(`${JSON.stringify({ receiverPorts: ports })}\n`);
// Leave with the benchmark, even when it dies without stopping us.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && process.exit(0), 1000).unref();
