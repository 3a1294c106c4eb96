import http from "node:http";
import type { AddressInfo } from "node:net";
import { Command, Option } from "commander";
import { WebhookEndpointService } from "../../../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { EVENT_TYPES } from "../../events/event-bus.js";
import { verifyWebhookSignature, WebhookSignatureError } from "../../webhooks/signature.js";
import { splitList, UsageError, wholeNumber, type CliContext } from "../context.js";

/** Largest delivery body the listener reads, in bytes. */
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * `msgsvc webhooks listen --workspace W [--events a,b] [--port N] [--status CODE] [--keep] [--json]`:
 * local development's receiver, in the manner of `stripe listen`. It starts
 * an HTTP server on 127.0.0.1 (PORT, 0 = a free one), creates an endpoint of
 * the workspace pointing at it (the service must allow plain-http loopback
 * and private targets: the embedded default of `npm start` does), verifies
 * each delivery's Service-Signature with the endpoint's secret, prints one
 * line per delivery (the envelope with --json), and answers `--status`
 * (200 by default; 500 to watch retries). On SIGINT or SIGTERM it deletes
 * the endpoint (unless --keep) and exits 0.
 */
export function webhookListenCommand(ctx: CliContext): Command {
  return new Command("listen")
    .description("receive a workspace's webhooks on this machine: a local receiver, its endpoint, signatures verified")
    .requiredOption("--workspace <id>", "workspace whose events to receive")
    .addOption(new Option("--events <list>", "comma-separated event types").default(EVENT_TYPES.join(","), "all"))
    .option("--port <n>", "local port (0: a free one)", "0")
    .option("--status <code>", "HTTP status to answer (200; 500 shows the retries)", "200")
    .option("--keep", "keep the endpoint when stopping")
    .option("--json", "print each verified envelope as JSON")
    .action(async (o: { workspace: string; events: string; port: string; status: string; keep?: boolean; json?: boolean }) => {
      const status = wholeNumber("--status", o.status);
      if (status < 200 || status > 599) throw new UsageError("--status: must be an HTTP status from 200 to 599");
      const port = wholeNumber("--port", o.port);
      if (port < 0 || port > 65_535) throw new UsageError("--port: must be a port number from 0 to 65535");
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
          res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ received: true }));
          if (o.json) ctx.printJson(JSON.parse(body.toString("utf8")));
          else report(`${verdict}  → ${status}`);
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
      if (o.json) ctx.printJson({ listening: url, webhook_endpoint_id: id });
      else ctx.say(`Listening at ${url} as endpoint ${id} (events: ${created.webhookEndpoint!.events.join(",")}); Ctrl-C stops${o.keep ? "" : " and deletes it"}.`, false);
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
