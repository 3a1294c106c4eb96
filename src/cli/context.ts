import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescMessage, DescService, Message } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import Table from "cli-table3";
import ms from "ms";
import { toRestJson } from "../contract/rest-json.js";

/** A list response of the console API (AIP-132 with the spec's list envelope). */
export interface ListAnswer extends Message {
  data: Message[];
  nextPageToken?: string;
}

/** Everything a command needs: clients, output mode and printing. */
export interface CliContext {
  client<S extends DescService>(service: S): Client<S>;
  /** Prints a resource or resources: JSON with --json, else `columns` as a table. */
  print(desc: DescMessage, value: Message | Message[], columns: string[], json: boolean): void;
  /**
   * Prints a list response: with --json the whole answer (`object`, `data`,
   * `total`, `next_page_token`), else its items as a table and, when there is
   * a next page, the option that shows it.
   */
  printList(responseDesc: DescMessage, answer: ListAnswer, columns: string[], json: boolean): void;
  /** Prints a line for people (suppressed with --json). */
  say(text: string, json: boolean): void;
  /** Prints a JSON value as is (for answers that are not one resource). */
  printJson(value: unknown): void;
}

/** A mistake in the command line, found before calling the console; exit code 2. */
export class UsageError extends Error {}

/**
 * A command that ran but did not achieve what it was asked (for example a
 * manual delivery attempt that failed); printed as `error: <code>: <message>`, exit code 1.
 */
export class CommandFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

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

/**
 * An `--expire-old-in` value (how long a replaced secret keeps working): "0"
 * or a duration such as "30m", "24h", "7d"; in ms.
 *
 * @throws UsageError naming the option when it is neither.
 */
export function overlapMs(value: string): number {
  const overlap = value === "0" ? 0 : ms(value as ms.StringValue);
  if (typeof overlap !== "number" || Number.isNaN(overlap) || overlap < 0) {
    throw new UsageError(`--expire-old-in: must be a duration such as 0, 30m, 24h or 7d, got ${JSON.stringify(value)}`);
  }
  return overlap;
}

/**
 * A time option such as `--since` or `--until`: a duration back from now
 * ("1h", "30m", "7d") or an ISO 8601 time; undefined when not given.
 *
 * @throws UsageError naming `name` when it is neither.
 */
export function since(option: string | undefined, name = "--since") {
  if (option === undefined) return undefined;
  const back = ms(option as ms.StringValue);
  const at = typeof back === "number" && back > 0 ? Date.now() - back : Date.parse(option);
  if (Number.isNaN(at)) throw new UsageError(`${name}: must be a duration such as 1h or 30m, or an ISO 8601 time, got ${JSON.stringify(option)}`);
  return timestampFromDate(new Date(at));
}

/**
 * One table cell of a REST JSON value: "-" for null, lists joined by ","
 * (lists of objects by "; "), objects as `key=value` pairs (so a user's roles
 * read `workspace_id=3f0c… role=viewer`), everything else as text.
 */
export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (Array.isArray(value)) {
    if (value.length === 0) return "-";
    return value.map(formatCell).join(value.some((v) => typeof v === "object" && v !== null) ? "; " : ",");
  }
  if (typeof value === "object") {
    return Object.entries(value as Record<string, unknown>)
      .map(([key, v]) => `${key}=${formatCell(v)}`)
      .join(" ");
  }
  return String(value);
}

/** cli-table3 drawing without borders: columns apart by two spaces, as `kubectl get` and `stripe` print them. */
const PLAIN_TABLE = {
  chars: {
    top: "", "top-mid": "", "top-left": "", "top-right": "",
    bottom: "", "bottom-mid": "", "bottom-left": "", "bottom-right": "",
    left: "", "left-mid": "", mid: "", "mid-mid": "",
    right: "", "right-mid": "", middle: "  ",
  },
  style: { head: [], border: [], "padding-left": 0, "padding-right": 0 },
};

/**
 * Formats rows of REST JSON objects as a text table (cli-table3, no colours,
 * no borders): a header of upper-case column names, then one line per row.
 */
export function formatTable(rows: Record<string, unknown>[], columns: string[]): string {
  const table = new Table({ head: columns.map((c) => c.toUpperCase()), ...PLAIN_TABLE });
  for (const row of rows) table.push(columns.map((c) => formatCell(row[c])));
  return table
    .toString()
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n");
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
    printList(responseDesc, answer, columns, json) {
      const whole = toRestJson(responseDesc, answer) as { data: Record<string, unknown>[] };
      if (json) return out(JSON.stringify(whole, null, 2));
      out(formatTable(whole.data, columns));
      if (answer.nextPageToken) out(`more: --page-token ${answer.nextPageToken}`);
    },
    say(text, json) {
      if (!json) out(text);
    },
    printJson(value) {
      out(JSON.stringify(value, null, 2));
    },
  };
}
