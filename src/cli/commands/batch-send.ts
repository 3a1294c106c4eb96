import { readFileSync, writeFileSync } from "node:fs";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { parse as parseCsv } from "csv-parse/sync";
import {
  BatchSendMessagesResultSchema,
  MessageService,
  SendMessageRequestSchema,
  type SendMessageRequest,
} from "../../../gen/messaging/v1/messages_pb.js";
import { fromRestJson, toRestJson } from "../../contract/rest-json.js";
import { CommandFailure, UsageError, wholeNumber, type CliContext } from "../context.js";

/** Items of one BatchSendMessages request, at most (README "Sending messages", Batch sends). */
const MAX_BATCH = 1000;

/** One item to send and the line of the input file it came from (1-based; a CSV's header is line 1). */
interface Item {
  line: number;
  request: SendMessageRequest;
}

/** Columns of a CSV input that are fields of the send, not variables. */
const CSV_FIELDS = new Set(["to", "sender", "template", "flow_token"]);

/**
 * Reads the items of `file`: CSV (a `.csv` name) with a header row naming `to`, optionally `sender`, `template`
 * and `flow_token`, and the template's variables (an empty cell leaves the variable out); else JSON Lines, each
 * line the body of a single send (`{"to", "sender", "template": {"id", "variables", "flow"}}`, REST JSON). A
 * missing sender or template id is taken from `defaults`.
 *
 * @throws UsageError naming the file, the line and what is wrong, before anything is sent.
 */
export function readBatchFile(file: string, text: string, defaults: { sender: string; template: string }): Item[] {
  const bodies: { line: number; body: JsonValue }[] = [];
  if (file.toLowerCase().endsWith(".csv")) {
    let rows: Record<string, string>[];
    try {
      rows = parseCsv(text, { columns: true, skip_empty_lines: true, trim: true, bom: true });
    } catch (err) {
      throw new UsageError(`${file}: not valid CSV: ${(err as Error).message}`);
    }
    if (rows.length > 0 && !("to" in rows[0]!)) throw new UsageError(`${file}: the header must name a "to" column (and the template's variables)`);
    rows.forEach((row, i) => {
      const variables: JsonObject = {};
      for (const [name, value] of Object.entries(row)) if (!CSV_FIELDS.has(name) && value !== "") variables[name] = value;
      bodies.push({
        line: i + 2,
        body: {
          to: row.to ?? "",
          sender: row.sender || defaults.sender,
          template: { id: row.template || defaults.template, variables, ...(row.flow_token ? { flow: { token: row.flow_token } } : {}) },
        },
      });
    });
  } else {
    text.split(/\r?\n/).forEach((lineText, i) => {
      if (lineText.trim() === "") return;
      let body: JsonValue;
      try {
        body = JSON.parse(lineText) as JsonValue;
      } catch (err) {
        throw new UsageError(`${file} line ${i + 1}: not JSON: ${(err as Error).message}`);
      }
      if (body === null || typeof body !== "object" || Array.isArray(body)) throw new UsageError(`${file} line ${i + 1}: must be a JSON object (the body of a send)`);
      const template = (body.template ?? {}) as JsonObject;
      if (typeof template !== "object" || Array.isArray(template)) throw new UsageError(`${file} line ${i + 1}: template: must be an object`);
      bodies.push({ line: i + 1, body: { ...body, sender: body.sender ?? defaults.sender, template: { ...template, id: template.id ?? defaults.template } } });
    });
  }
  if (bodies.length === 0) throw new UsageError(`${file}: has no messages`);
  return bodies.map(({ line, body }) => {
    const read = fromRestJson(SendMessageRequestSchema, body);
    if (!read.ok) throw new UsageError(`${file} line ${line}: ${read.violations.map((v) => `${v.field}: ${v.description}`).join("; ")}`);
    return { line, request: read.message };
  });
}

/**
 * `msgsvc messages send --batch FILE`: sends every message of FILE through the public API
 * (messaging.v1.MessageService/BatchSendMessages over Connect at API_URL, with the API key in API_KEY or
 * --api-key), 1,000 a request, prints a summary and writes each item's result, in the file's order, to a JSON
 * Lines file (`{"line", "to", "message", "error"}`). With --idempotency-key K, request n carries `K-n`: running
 * the same command again answers the same results and spends nothing again. Exits 1 when an item was refused.
 */
export function batchSendCommand(ctx: CliContext, env: NodeJS.ProcessEnv): (o: BatchSendOptions) => Promise<void> {
  return async (o) => {
    const apiKey = o.apiKey ?? env.API_KEY;
    if (!apiKey) throw new UsageError("messages send: an API key with the scope messages:send is needed: --api-key or API_KEY");
    const size = wholeNumber("--batch-size", o.batchSize);
    if (size < 1 || size > MAX_BATCH) throw new UsageError(`--batch-size: must be from 1 to ${MAX_BATCH}, got ${size}`);
    let text: string;
    try {
      text = readFileSync(o.batch, "utf8");
    } catch (err) {
      throw new UsageError(`--batch: cannot read ${o.batch}: ${(err as Error).message}`);
    }
    const items = readBatchFile(o.batch, text, { sender: o.sender ?? "", template: o.template ?? "" });
    const auth: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${apiKey}`);
      return next(req);
    };
    const baseUrl = env.API_URL || "http://127.0.0.1:8080";
    const client = createClient(MessageService, createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [auth] }));
    const lines: string[] = [];
    const refusedBy = new Map<string, number>();
    let accepted = 0;
    for (let from = 0, n = 1; from < items.length; from += size, n++) {
      const chunk = items.slice(from, from + size);
      const headers = o.idempotencyKey ? { "idempotency-key": `${o.idempotencyKey}-${n}` } : undefined;
      const res = await client.batchSendMessages({ messages: chunk.map((i) => i.request) }, { headers });
      res.results.forEach((result, k) => {
        const json = toRestJson(BatchSendMessagesResultSchema, result) as { message: JsonObject | null; error: { code: string } | null };
        if (json.error) refusedBy.set(json.error.code, (refusedBy.get(json.error.code) ?? 0) + 1);
        else accepted++;
        lines.push(JSON.stringify({ line: chunk[k]!.line, to: chunk[k]!.request.to, message: json.message, error: json.error }));
      });
    }
    const out = o.results ?? `${o.batch}.results.jsonl`;
    writeFileSync(out, `${lines.join("\n")}\n`);
    const refused = items.length - accepted;
    const why = [...refusedBy].map(([code, count]) => `${code} ${count}`).join(", ");
    const summary = { messages: items.length, accepted, refused, refused_by_code: Object.fromEntries(refusedBy), requests: Math.ceil(items.length / size), results: out };
    if (o.json) ctx.printJson(summary);
    else ctx.say(`${items.length} messages in ${summary.requests} request${summary.requests === 1 ? "" : "s"}: ${accepted} accepted, ${refused} refused${why ? ` (${why})` : ""}; results in ${out}`, false);
    if (refused > 0) throw new CommandFailure("items_refused", `${refused} of ${items.length} messages were refused; see ${out}`);
  };
}

/** Options of `messages send`. */
export interface BatchSendOptions {
  batch: string;
  sender?: string;
  template?: string;
  results?: string;
  idempotencyKey?: string;
  batchSize: string;
  apiKey?: string;
  json?: boolean;
}
