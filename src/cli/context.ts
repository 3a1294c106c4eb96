import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescMessage, DescService, Message } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import ms from "ms";
import { toRestJson } from "../gateway/rest-json.js";

/** Everything a command needs: clients, output mode and printing. */
export interface CliContext {
  client<S extends DescService>(service: S): Client<S>;
  /** Prints a resource or list: JSON with --json, else `columns` as a table. */
  print(desc: DescMessage, value: Message | Message[], columns: string[], json: boolean): void;
  /** Prints a line for people (suppressed with --json). */
  say(text: string, json: boolean): void;
  /** Prints a JSON value as is (for answers that are not one resource). */
  printJson(value: unknown): void;
}

/** A mistake in the command line, found before calling the console; exit code 2. */
export class UsageError extends Error {}

/** Splits a comma-separated option value, dropping empty items. */
export const splitList = (value: string) =>
  value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

/** Parses a whole-number option or throws UsageError naming it. */
export function wholeNumber(option: string, value: string): number {
  if (!/^-?\d+$/.test(value)) throw new UsageError(`${option}: must be a whole number, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** A `--since` value: a duration back from now ("1h", "30m", "7d") or an ISO 8601 time. */
export function since(option: string | undefined) {
  if (option === undefined) return undefined;
  const back = ms(option as ms.StringValue);
  const at = typeof back === "number" && back > 0 ? Date.now() - back : Date.parse(option);
  if (Number.isNaN(at)) throw new UsageError(`--since: must be a duration such as 1h or 30m, or an ISO 8601 time, got ${JSON.stringify(option)}`);
  return timestampFromDate(new Date(at));
}

/** Formats rows of REST JSON objects as an aligned text table. */
export function formatTable(rows: Record<string, unknown>[], columns: string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? "-" : Array.isArray(v) ? v.join(",") : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i] as number)).join("  ").trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join("\n");
}

/** The context of a CLI run against CONSOLE_URL with CONSOLE_TOKEN, writing with `out`. */
export function createCliContext(env: NodeJS.ProcessEnv, out: (text: string) => void): CliContext {
  const baseUrl = env.CONSOLE_URL || "http://127.0.0.1:8081";
  const token = env.CONSOLE_TOKEN ?? "";
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [auth] });
  return {
    client: (service) => createClient(service, transport),
    print(desc, value, columns, json) {
      const rows = (Array.isArray(value) ? value : [value]).map((m) => toRestJson(desc, m));
      if (json) out(JSON.stringify(Array.isArray(value) ? rows : rows[0], null, 2));
      else out(formatTable(rows, columns));
    },
    say(text, json) {
      if (!json) out(text);
    },
    printJson(value) {
      out(JSON.stringify(value, null, 2));
    },
  };
}
