import { readdir, readFile } from "node:fs/promises";
import type { ClientHttp2Session } from "node:http2";
import path from "node:path";
import { status as grpcStatus } from "@grpc/grpc-js";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import type { Db } from "mongodb";
import { BUILD_DIR } from "../../src/codegen/build-service.js";
import { DISPATCH_DONE } from "../../src/messages/message-store.js";

/*
 * Benchmark helpers: closed-loop load with N concurrent workers, latency
 * percentiles, peak RSS and CPU time of a server process read from /proc,
 * and a plain text table. Numbers are printed, never asserted.
 */

/**
 * One unary gRPC call over `session`, as gRPC over HTTP/2 specifies
 * (grpc/grpc PROTOCOL-HTTP2.md): a POST of `message` behind its 5-byte
 * length prefix, with `te: trailers` and the call's `metadata`, answered by
 * the response message and a `grpc-status` trailer (or by headers alone, a
 * trailers-only answer). Resolves to the status's name ("OK",
 * "UNAUTHENTICATED", …), or "error" when the stream fails.
 *
 * The load generator of the measured gRPC rounds: it takes about a third of
 * @grpc/grpc-js's CPU per call (60 against 160–190 µs in a loop against a
 * bare HTTP/2 server here), as the field's load generators (ghz, h2load)
 * keep theirs low, and the service shares this machine's 2 cores with its
 * clients. The warm-up rounds call through grpc-js, whose figures stay in the table.
 * The session needs an "error" listener of its own (a reset connection).
 */
export function grpcUnary(session: ClientHttp2Session, path: string, message: Uint8Array, metadata: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    const frame = Buffer.allocUnsafe(5 + message.length);
    frame[0] = 0;
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...metadata });
    let code: string | undefined;
    stream.on("response", (headers) => (code ??= headers["grpc-status"] as string | undefined));
    stream.on("trailers", (trailers) => (code = trailers["grpc-status"] as string | undefined));
    stream.on("data", () => {});
    stream.on("end", () => resolve(code === undefined ? "error" : (grpcStatus[Number(code)] ?? `status ${code}`)));
    stream.on("error", () => resolve("error"));
    stream.on("close", () => resolve("error")); // closed without an end (reset): a resolved promise ignores it otherwise
    stream.end(frame);
  });
}

/**
 * The sender number of the benches that measure the service's own costs (all but the pacing bench): the simulator
 * holds numbers ending in 1000 at 1,000 messages a second (an upgraded WhatsApp number), and the benches create it
 * with that throughput, so that pacing (README "Pacing") does not set their pace.
 */
export const UPGRADED_NUMBER = "15550001000";

/**
 * Connect clients (JSON over HTTP/1.1) of the console at `consoleUrl`
 * ("http://127.0.0.1:<console port>"), authenticated with the console token
 * `token`: `client(WorkspaceService).createWorkspace(…)`.
 */
export function consoleClients(consoleUrl: string, token: string): <S extends DescService>(service: S) => Client<S> {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl: consoleUrl, httpVersion: "1.1", interceptors: [auth] });
  return (service) => createClient(service, transport);
}

/** Result of one load run. */
export interface LoadResult {
  name: string;
  requests: number;
  seconds: number;
  /** Answers by outcome label (for example "200", "429", "error"). */
  outcomes: Map<string, number>;
  /** Latencies in milliseconds, sorted. */
  latencies: Float64Array;
  /** Peak resident set size of the server process during the run, in MiB. */
  peakRssMiB: number | undefined;
  /**
   * CPU time of the server process per recorded request, in ms (all its
   * work meanwhile, background work included); undefined without a server pid.
   */
  serverCpuMs?: number;
  /**
   * CPU time of the bench's own process per recorded request, in ms: the
   * load generator's clients, and whatever else runs in it meanwhile (the
   * command relay, where one counts: command-counter.ts). It shares the
   * machine with the server.
   */
  benchCpuMs: number;
}

/** The p-th percentile (0-100) of sorted values. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** Resident set size of process `pid` in MiB (Linux), or undefined. */
export async function rssMiB(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb ? Number(kb) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The build of one of the bench's own process entries (`test/bench/<name>.ts`,
 * built by run.ts with the service): they run as plain JavaScript, as the
 * service does, not through tsx.
 */
export function benchProcessEntry(name: "trivial-servers" | "webhook-service" | "webhook-receivers"): string {
  return path.join(BUILD_DIR, "test", "bench", `${name}.js`);
}

/**
 * CPU time process `pid` has used so far (user and system, from
 * /proc/<pid>/stat), in seconds; undefined where that cannot be read (not
 * Linux, or the process is gone).
 */
export async function cpuSeconds(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // The fields after the command name (which may hold spaces), from the state on: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * CPU time the JIT compiler threads of JVM `pid` have used so far (threads
 * named "C1 CompilerThread…" and "C2 CompilerThread…", from
 * /proc/<pid>/task/<tid>/stat), in seconds; undefined where that cannot be
 * read. Left out of the database's CPU per message, it shows what its
 * command handling costs once compiled.
 */
export async function jitCompilerCpuSeconds(pid: number): Promise<number | undefined> {
  try {
    let ticks = 0;
    for (const tid of await readdir(`/proc/${pid}/task`)) {
      const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, "utf8").catch(() => "");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      if (!/^C[12] CompilerThre/.test(name)) continue;
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    }
    return ticks / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The kernel's clock ticks per second, the unit of /proc/<pid>/stat's times (USER_HZ: 100 on Linux). */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * Runs `call` from `concurrency` workers, either for `seconds` after
 * `warmupSeconds` of unrecorded warm-up, or (with `callsPerWorker`) until
 * each worker has made that many calls, without warm-up. With `perSecond`,
 * calls start on a schedule instead of as fast as answers come: the n-th
 * call of all (worker `w`'s k-th is n = k·concurrency + w) is due n/perSecond
 * seconds after the start, and starts then or, when its worker is still
 * waiting for an answer, as soon as it has it. `call` resolves to an outcome
 * label.
 */
export async function runLoad(options: {
  name: string;
  concurrency: number;
  seconds?: number;
  callsPerWorker?: number;
  warmupSeconds?: number;
  perSecond?: number;
  serverPid?: number;
  call: (worker: number) => Promise<string>;
}): Promise<LoadResult> {
  const began = performance.now();
  const fixedWork = options.callsPerWorker !== undefined;
  const warmupUntil = fixedWork ? began : began + (options.warmupSeconds ?? 1) * 1000;
  const stopAt = fixedWork ? Infinity : warmupUntil + (options.seconds ?? 10) * 1000;
  const latencies: number[] = [];
  const outcomes = new Map<string, number>();
  let peak: number | undefined;
  const sampler = options.serverPid
    ? setInterval(() => {
        void rssMiB(options.serverPid as number).then((v) => {
          if (v !== undefined && performance.now() > warmupUntil) peak = Math.max(peak ?? 0, v);
        });
      }, 100)
    : undefined;
  // The server's CPU time over the recorded part (from the end of the warm-up).
  const cpuAtStart = options.serverPid
    ? new Promise<number | undefined>((resolve) =>
        setTimeout(() => void cpuSeconds(options.serverPid as number).then(resolve), Math.max(0, warmupUntil - performance.now())),
      )
    : undefined;
  let benchCpuAtStart = process.cpuUsage();
  const benchCpuTimer = setTimeout(() => (benchCpuAtStart = process.cpuUsage()), Math.max(0, warmupUntil - performance.now()));
  const worker = async (id: number) => {
    for (let calls = 0; calls < (options.callsPerWorker ?? Infinity); calls++) {
      if (options.perSecond) {
        const wait = began + ((calls * options.concurrency + id) * 1000) / options.perSecond - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      const start = performance.now();
      if (start >= stopAt) return;
      let outcome: string;
      try {
        outcome = await options.call(id);
      } catch {
        outcome = "error";
      }
      if (start >= warmupUntil) {
        latencies.push(performance.now() - start);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, (_, i) => worker(i)));
  if (sampler) clearInterval(sampler);
  clearTimeout(benchCpuTimer);
  const benchCpu = process.cpuUsage(benchCpuAtStart);
  const [cpuStart, cpuEnd] = options.serverPid ? [await cpuAtStart, await cpuSeconds(options.serverPid)] : [];
  const sorted = Float64Array.from(latencies).sort();
  const seconds = fixedWork ? (performance.now() - began) / 1000 : (options.seconds ?? 10);
  const serverCpuMs = cpuStart !== undefined && cpuEnd !== undefined && latencies.length > 0 ? ((cpuEnd - cpuStart) * 1000) / latencies.length : undefined;
  const benchCpuMs = (benchCpu.user + benchCpu.system) / 1000 / Math.max(1, latencies.length);
  return { name: options.name, requests: latencies.length, seconds, outcomes, latencies: sorted, peakRssMiB: peak, serverCpuMs, benchCpuMs };
}

/** Formats rows as an aligned text table with a header line. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** Formats load results as the benchmark's table. */
export function loadTable(results: LoadResult[]): string {
  return table(
    ["run", "requests/s", "p50 ms", "p99 ms", "peak RSS MiB", "server CPU ms/request", "bench CPU ms/request", "answers"],
    results.map((r) => [
      r.name,
      (r.requests / r.seconds).toFixed(0),
      percentile(r.latencies, 50).toFixed(2),
      percentile(r.latencies, 99).toFixed(2),
      r.peakRssMiB === undefined ? "-" : r.peakRssMiB.toFixed(0),
      r.serverCpuMs === undefined ? "-" : r.serverCpuMs.toFixed(3),
      r.benchCpuMs.toFixed(3),
      [...r.outcomes].map(([k, v]) => `${k}: ${v}`).join(", "),
    ]),
  );
}

/**
 * How many messages of `senderIds` in the service's database `db` are done with dispatch (handed to the network and
 * answered, or failed for good), counted from the service's partial index of done messages by sender
 * (`sent_by_sender`, src/messages/message-store.ts), as the service's own reads are. A bench polls this while a
 * campaign runs: a count by `status` has no index and scans every message in the embedded database, taking its time
 * from the campaign measured (28,000 messages of about 2 KB: 140 to 730 ms a scan on H2, against 2 ms from the index).
 */
function countDone(db: Db, senderIds: readonly string[]): Promise<number> {
  return db.collection("messages").countDocuments({ ...DISPATCH_DONE, sender_id: { $in: [...senderIds] } });
}

/**
 * Waits until all `count` messages of `senderIds` are done with dispatch and none of them still shows `scheduled` or
 * `accepted` (a failure's status is written after its dispatch is done), polling countDone every `everyMs` and the
 * statuses (a scan) only once all are done. `each` runs after every poll with the count done.
 *
 * @throws Error naming `name` when some are not done after 15 minutes.
 */
export async function awaitDispatched(
  db: Db,
  o: { senderIds: readonly string[]; count: number; name: string; everyMs: number; each?: (done: number) => Promise<void> },
): Promise<void> {
  const started = Date.now();
  for (;;) {
    const done = await countDone(db, o.senderIds);
    await o.each?.(done);
    if (done >= o.count && (await db.collection("messages").countDocuments({ sender_id: { $in: [...o.senderIds] }, status: { $in: ["scheduled", "accepted"] } })) === 0) return;
    if (Date.now() - started > 900_000) throw new Error(`${o.name}: ${o.count - done} messages not sent after 15 minutes`);
    await new Promise((r) => setTimeout(r, o.everyMs));
  }
}
