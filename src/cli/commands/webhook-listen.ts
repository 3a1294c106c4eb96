import http from "node:http";
import type { AddressInfo } from "node:net";
import { Command, Option } from "commander";
import { WebhookEndpointService } from "../../../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { EVENT_TYPES } from "../../events/event-bus.js";
import { verifyWebhookSignature, WebhookSignatureError } from "../../webhooks/signature.js";
import { splitList, UsageError, wholeNumber, type CliContext } from "../context.js";

/** Largest delivery body the listener reads, in bytes. */
const MAX_BODY_BYTES = 1024 * 1024;

/** Request headers not passed on to the --forward-to app: hop-by-hop ones (RFC 9110 §7.6.1) and those the new request sets itself. */
const NOT_FORWARDED = new Set(["host", "connection", "keep-alive", "transfer-encoding", "te", "upgrade", "proxy-connection", "content-length"]);

/** How long the listener waits for the --forward-to app, in ms: the service's own answer deadline (spec §Delivery rules). */
const FORWARD_TIMEOUT_MS = 10_000;

/** What the local app answered to a forwarded delivery. */
interface Forwarded {
  /** The app's HTTP status, or 502 when it could not be reached (also answered to the service). */
  status: number;
  body: Buffer;
  contentType: string;
  /** Printed after the status: "" or the reason it could not be reached. */
  note: string;
}

/** POSTs (with the delivery's method) `body` and the delivery's headers to `url`; never throws. */
async function forward(url: string, req: http.IncomingMessage, body: Buffer): Promise<Forwarded> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || NOT_FORWARDED.has(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  try {
    const res = await fetch(url, { method: req.method, headers, body, redirect: "manual", signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS) });
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get("content-type") ?? "text/plain", note: "" };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const reason = (err as Error).name === "TimeoutError" ? `no answer within ${FORWARD_TIMEOUT_MS / 1000} s` : (cause?.code ?? cause?.message ?? (err as Error).message);
    return { status: 502, body: Buffer.from(`could not reach ${url}: ${reason}`), contentType: "text/plain", note: ` (${reason})` };
  }
}

/**
 * `msgsvc webhooks listen --workspace W [--forward-to URL] [--events a,b] [--port N] [--status CODE] [--keep] [--json]`:
 * local development's receiver, in the manner of `stripe listen`. It starts
 * an HTTP server on 127.0.0.1 (PORT, 0 = a free one), creates an endpoint of
 * the workspace pointing at it (the service must allow plain-http loopback
 * and private targets: the embedded default of `npm start` does), prints the
 * endpoint's signing secret once, and verifies each delivery's
 * Service-Signature with it.
 *
 * With `--forward-to URL` a verified delivery is passed on to URL with the
 * same method, headers and raw body (so the app verifies the signature
 * itself, with the printed secret), and the app's answer (status and body)
 * is the answer to the service: an app that answers 500 sees the retries.
 * An app that cannot be reached within 10 s gets the service a 502. Without
 * it, every verified delivery is answered `--status` (200 by default).
 *
 * Prints one line per delivery: time, event type, event id, then the
 * outcome (`→ <status>`, and `in <ms> ms` when forwarded), or the envelope
 * with --json. On SIGINT or SIGTERM it deletes the endpoint (unless --keep)
 * and exits 0.
 */
export function webhookListenCommand(ctx: CliContext): Command {
  return new Command("listen")
    .description("receive a workspace's webhooks on this machine and optionally forward them to your app")
    .requiredOption("--workspace <id>", "workspace whose events to receive")
    .option("--forward-to <url>", "pass each verified delivery on to this URL (for example http://localhost:3000/webhooks)")
    .addOption(new Option("--events <list>", "comma-separated event types").default(EVENT_TYPES.join(","), "all"))
    .option("--port <n>", "local port (0: a free one)", "0")
    .option("--status <code>", "HTTP status to answer without --forward-to (500 shows the retries)", "200")
    .option("--keep", "keep the endpoint when stopping")
    .option("--json", "print each verified envelope as JSON")
    .action(async (o: { workspace: string; forwardTo?: string; events: string; port: string; status: string; keep?: boolean; json?: boolean }) => {
      const status = wholeNumber("--status", o.status);
      if (status < 200 || status > 599) throw new UsageError("--status: must be an HTTP status from 200 to 599");
      const port = wholeNumber("--port", o.port);
      if (port < 0 || port > 65_535) throw new UsageError("--port: must be a port number from 0 to 65535");
      const forwardTo = o.forwardTo;
      if (forwardTo !== undefined && !URL.canParse(forwardTo)) throw new UsageError(`--forward-to: must be an absolute URL such as http://localhost:3000/webhooks, got ${JSON.stringify(forwardTo)}`);
      if (forwardTo !== undefined && !/^https?:$/.test(new URL(forwardTo).protocol)) throw new UsageError("--forward-to: must be an http or https URL");
      let secret = "";
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        req.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_BODY_BYTES) chunks.push(chunk);
        });
        const report = (outcome: string) =>
          ctx.say(`${new Date().toISOString()}  ${req.headers["service-event"] ?? "?"}  ${req.headers["service-delivery"] ?? "?"}  ${outcome}`, false);
        req.on("end", () => {
          const body = Buffer.concat(chunks);
          let verdict = "signature ok";
          try {
            if (size > MAX_BODY_BYTES) throw new Error("body over 1 MiB");
            verifyWebhookSignature(body, req.headers["service-signature"]?.toString(), secret);
          } catch (err) {
            verdict = err instanceof WebhookSignatureError ? `signature refused: ${err.reason}` : `refused: ${(err as Error).message}`;
            res.writeHead(400, { "content-type": "text/plain" }).end(verdict);
            report(verdict);
            return;
          }
          if (o.json) ctx.printJson(JSON.parse(body.toString("utf8")));
          if (forwardTo === undefined) {
            res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ received: true }));
            if (!o.json) report(`${verdict}  → ${status}`);
            return;
          }
          const started = performance.now();
          void forward(forwardTo, req, body).then((answer) => {
            res.writeHead(answer.status, { "content-type": answer.contentType }).end(answer.body);
            if (!o.json) report(`${verdict}  → ${forwardTo} ${answer.status}${answer.note} in ${Math.round(performance.now() - started)} ms`);
          });
        });
      });
      await new Promise<void>((resolve, reject) => server.once("error", reject).listen(port, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
      const client = ctx.client(WebhookEndpointService);
      let created;
      try {
        created = await client.createWebhookEndpoint({ workspaceId: o.workspace, name: "msgsvc webhooks listen", url, events: splitList(o.events) });
      } catch (err) {
        server.close();
        throw err;
      }
      secret = created.secret;
      const id = created.webhookEndpoint!.id;
      if (o.json) ctx.printJson({ listening: url, webhook_endpoint_id: id, secret, forward_to: forwardTo ?? null });
      else {
        ctx.say(`Listening at ${url} as endpoint ${id} (events: ${created.webhookEndpoint!.events.join(",")}); Ctrl-C stops${o.keep ? "" : " and deletes it"}.`, false);
        ctx.say(`Signing secret: ${secret}`, false);
        if (forwardTo !== undefined) ctx.say(`Forwarding verified deliveries to ${forwardTo}`, false);
      }
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      server.close();
      server.closeAllConnections();
      if (!o.keep) {
        await client.deleteWebhookEndpoint({ id });
        ctx.say(`deleted ${id}`, !!o.json);
      }
    });
}
