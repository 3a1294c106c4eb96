import type { MongoClient } from "mongodb";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { HttpRoute } from "../gateway/node-http.js";
import type { Logger } from "../shared/logger.js";

/** Buckets of request and command latency histograms, in seconds (1 ms … 10 s). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Buckets of lags measured in seconds to minutes (dispatch after acceptance). */
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * The service's Prometheus metrics (prom-client), one registry per running
 * service, served as text at GET /metrics on the console port. Names follow
 * Prometheus conventions: `msgsvc_` prefix, base units (seconds), `_total`
 * for counters. Labels never carry workspace, key or message ids (bounded
 * cardinality; an unknown route's operation is "none").
 */
export interface Metrics {
  readonly registry: Registry;
  /** Public requests answered, by operation (e.g. "messaging.v1.MessageService/SendMessage"), protocol and code ("ok" or the error code). */
  readonly requests: Counter<"operation" | "protocol" | "code">;
  /** Time from a public request's arrival to the end of its answer, in seconds. */
  readonly requestDuration: Histogram<"operation" | "protocol">;
  /** Messages accepted by SendMessage and BatchSendMessages (stored, credits reserved). */
  readonly messagesAccepted: Counter;
  /** Dispatch outcomes: "sent" (the network took it), "refused" (for good: failed), "retry" (a retryable error). */
  readonly messagesDispatched: Counter<"outcome">;
  /** The network's refusals of sends, by its error code (130429 throughput, 131056 pair rate, …). */
  readonly networkRefusals: Counter<"code">;
  /** From a message's acceptance to the network's answer to its dispatch, in seconds. */
  readonly dispatchLag: Histogram;
  /** Webhook delivery attempts by outcome: "succeeded", or the failure's error kind ("http_status", "timeout", …). */
  readonly webhookAttempts: Counter<"outcome">;
  /** Database commands by name and outcome, with their duration in seconds (driver command monitoring). */
  readonly databaseCommandDuration: Histogram<"command" | "outcome">;
  /**
   * Adds a gauge whose value is read at each scrape (for example the webhook
   * backlog, counted in the database). A failing read leaves the gauge out of
   * that scrape and is logged.
   */
  gauge(name: string, help: string, read: () => Promise<number>): void;
  /**
   * Adds gauges with one label (for example `sender_id`) whose values are read
   * at each scrape by one shared read: `read` answers, per label value, one
   * number per gauge, in the order of `gauges`. A label value the last read
   * had and this one has not is reported 0 once, then left out (the series
   * ends at 0, not at its last value). A failing read leaves the gauges out of
   * that scrape and is logged.
   */
  gaugesByLabel(label: string, gauges: readonly { name: string; help: string }[], read: () => Promise<Map<string, readonly number[]>>): void;
}

/** How long the values of one shared read of gaugesByLabel serve a scrape, in ms (the gauges of one scrape are collected together). */
const SHARED_READ_MS = 1000;

/** Creates the registry with the service's metrics and Node's default process metrics (memory, CPU, event loop). */
export function createMetrics(logger: Logger): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "msgsvc_" });
  const registers = [registry];
  return {
    registry,
    requests: new Counter({ name: "msgsvc_requests_total", help: "Public requests answered, by operation, protocol and code (ok or the error code).", labelNames: ["operation", "protocol", "code"], registers }),
    requestDuration: new Histogram({ name: "msgsvc_request_duration_seconds", help: "Public request latency, arrival to end of answer.", labelNames: ["operation", "protocol"], buckets: LATENCY_BUCKETS, registers }),
    messagesAccepted: new Counter({ name: "msgsvc_messages_accepted_total", help: "Messages accepted by SendMessage and BatchSendMessages.", registers }),
    messagesDispatched: new Counter({ name: "msgsvc_messages_dispatched_total", help: "Dispatches to the network by outcome: sent, refused (failed for good), retry.", labelNames: ["outcome"], registers }),
    dispatchLag: new Histogram({ name: "msgsvc_dispatch_lag_seconds", help: "From acceptance to the network's answer to the dispatch.", buckets: LAG_BUCKETS, registers }),
    networkRefusals: new Counter({ name: "msgsvc_network_refusals_total", help: "Sends the network refused, by its error code (130429 throughput, 131056 pair rate, 131026 undeliverable, …).", labelNames: ["code"], registers }),
    webhookAttempts: new Counter({ name: "msgsvc_webhook_attempts_total", help: "Webhook delivery attempts by outcome: succeeded or the error kind.", labelNames: ["outcome"], registers }),
    databaseCommandDuration: new Histogram({ name: "msgsvc_database_command_duration_seconds", help: "Database commands by name and outcome, with their duration.", labelNames: ["command", "outcome"], buckets: LATENCY_BUCKETS, registers }),
    gaugesByLabel(label, gauges, read) {
      let shared: { at: number; values: Promise<Map<string, readonly number[]>> } | null = null;
      let previous = new Set<string>();
      let reported = 0;
      /** One read for the gauges of one scrape: the first gauge collected starts it, the others take its answer. */
      const values = () => {
        const now = Date.now();
        if (!shared || now - shared.at > SHARED_READ_MS || reported >= gauges.length) {
          shared = { at: now, values: read() };
          reported = 0;
        }
        reported++;
        return shared.values;
      };
      const ended = new Map<number, Set<string>>();
      gauges.forEach(({ name, help }, i) => {
        new Gauge({
          name,
          help,
          labelNames: [label],
          registers,
          async collect() {
            try {
              const current = await values();
              // Label values gone since the last read: reported 0 by each gauge once.
              if (i === 0) {
                const gone = new Set([...previous].filter((v) => !current.has(v)));
                previous = new Set(current.keys());
                gauges.forEach((_, j) => ended.set(j, gone));
              }
              this.reset();
              for (const v of ended.get(i) ?? []) this.set({ [label]: v }, 0);
              for (const [v, numbers] of current) this.set({ [label]: v }, numbers[i] ?? 0);
            } catch (err) {
              this.reset();
              logger.warn({ err, metric: name }, "reading a metric failed");
            }
          },
        });
      });
    },
    gauge(name, help, read) {
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          try {
            this.set(await read());
          } catch (err) {
            logger.warn({ err, metric: name }, "reading a metric failed");
          }
        },
      });
    },
  };
}

/**
 * Observes every command of `client` (created with `monitorCommands: true`)
 * in `metrics.databaseCommandDuration`. Only with DATABASE_COMMAND_METRICS:
 * the driver then builds a second, plain copy of every reply for its event.
 */
export function observeDatabaseCommands(client: MongoClient, metrics: Metrics): void {
  client.on("commandSucceeded", (e) => metrics.databaseCommandDuration.observe({ command: e.commandName, outcome: "ok" }, e.duration / 1000));
  client.on("commandFailed", (e) => metrics.databaseCommandDuration.observe({ command: e.commandName, outcome: "error" }, e.duration / 1000));
}

/**
 * GET /metrics: the registry in Prometheus text format 0.0.4. Served on the
 * console port (loopback unless CONSOLE_HOST says otherwise) without a
 * token, as Prometheus scrapes it; it holds counts and latencies, never a
 * workspace's data.
 */
export function metricsRoute(metrics: Metrics): HttpRoute {
  return {
    method: "GET",
    path: "/metrics",
    async handler(_req, res) {
      const text = await metrics.registry.metrics();
      res.writeHead(200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" });
      res.end(text);
    },
  };
}
