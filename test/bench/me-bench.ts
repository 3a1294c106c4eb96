import * as grpc from "@grpc/grpc-js";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toBinary, create } from "@bufbuild/protobuf";
import { Pool } from "undici";
import { GetMeRequestSchema } from "../../gen/messaging/v1/account_pb.js";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { startProcess, startServiceProcess, stopProcess } from "../helpers/processes.js";
import { commandCells, countsBetween, startCommandCounter, type CommandCounts } from "./command-counter.js";
import { benchProcessEntry, loadTable, runLoad, table, type LoadResult } from "./harness.js";

/** Options of the GET /v1/me benchmark. */
export interface MeBenchOptions {
  mongodbUri: string;
  concurrency: number;
  seconds: number;
}

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/**
 * GET /v1/me over REST, Connect (JSON) and gRPC against the real service
 * (key check, shared rate window, request log) in its own process on the
 * real database, next to a trivial Connect-node handler (no database: the
 * framework's ceiling) and bare node:http. REST and Connect are driven by the
 * same HTTP/1.1 client (undici, one connection per worker), so their
 * difference is the server's; gRPC by @grpc/grpc-js over one HTTP/2 channel.
 *
 * Each client gets keys of its own of 100 requests per minute (the most a
 * key may have), as many per protocol as the run has seconds, and spends
 * them in turn: those calls are admitted (a key's first use reads it and
 * opens its rate window), the rest of the run's calls, on the last key, are
 * refused with 429 from the process's knowledge that the window is spent,
 * as a client over budget would see. The answers column shows the mix.
 * The trivial handler is measured right before and right after the REST
 * rounds, and REST is compared with the mean of the two.
 */
export async function runMeBench(options: MeBenchOptions): Promise<string> {
  const counter = await startCommandCounter(options.mongodbUri);
  const service = await startServiceProcess({
    MONGODB_URI: counter.uri,
    MONGODB_DATABASE: `bench_${Date.now()}`,
    CONSOLE_TOKEN,
    ROLE: "all",
  });
  const trivial = await startProcess(benchProcessEntry("trivial-servers"), {}, (line) =>
    typeof line.trivialPort === "number" ? (line as { trivialPort: number; barePort: number }) : undefined,
  );
  const pid = service.child.pid as number;
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${CONSOLE_TOKEN}`);
    return next(req);
  };
  const consoleTransport = createConnectTransport({ baseUrl: `http://127.0.0.1:${service.consolePort}`, httpVersion: "1.1", interceptors: [auth] });
  const { workspace } = await createClient(WorkspaceService, consoleTransport).createWorkspace({ name: "bench" });
  const keys = createClient(ApiKeyService, consoleTransport);
  const newKeys = async () =>
    Promise.all(
      Array.from({ length: options.concurrency }, async (_, i) =>
        (await keys.createApiKey({ workspaceId: workspace!.id, name: `bench ${i}`, rateLimitPerMin: 100 })).secret,
      ),
    );

  const base = `http://127.0.0.1:${service.publicPort}`;
  /** A protocol's way to call GetMe with the worker's key; resolves to the answer's status. */
  interface Driver {
    name: string;
    call(secret: string): Promise<string>;
    close(): Promise<void>;
  }
  const undiciDriver = (name: string, url: string, request: (secret: string) => Parameters<Pool["request"]>[0]): Driver => {
    const pool = new Pool(url, { connections: options.concurrency });
    return {
      name,
      async call(secret) {
        const res = await pool.request(request(secret));
        await res.body.dump();
        return String(res.statusCode);
      },
      close: () => pool.close(),
    };
  };
  const grpcDriver = (): Driver => {
    const client = new grpc.Client(`127.0.0.1:${service.publicPort}`, grpc.credentials.createInsecure());
    const request = Buffer.from(toBinary(GetMeRequestSchema, create(GetMeRequestSchema)));
    return {
      name: "gRPC GetMe (grpc-js)",
      call: (secret) =>
        new Promise((resolve) => {
          const md = new grpc.Metadata();
          md.set("authorization", `Bearer ${secret}`);
          const identity = (b: Buffer) => b;
          client.makeUnaryRequest("/messaging.v1.AccountService/GetMe", identity, identity, request, md, (err) =>
            resolve(err ? (grpc.status[err.code] ?? "error") : "OK"),
          );
        }),
      close: async () => client.close(),
    };
  };
  const drivers: Driver[] = [
    undiciDriver("REST GET /v1/me", base, (secret) => ({ path: "/v1/me", method: "GET", headers: { authorization: `Bearer ${secret}` } })),
    undiciDriver("Connect JSON GetMe", base, (secret) => ({
      path: "/messaging.v1.AccountService/GetMe",
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: "{}",
    })),
    grpcDriver(),
  ];

  /** Keys each client spends within budget: about a second of calls each, so the round lasts about as long as the others. */
  const keysPerClient = Math.max(1, Math.round(options.seconds));
  const results: LoadResult[] = [];
  /** Database commands per phase of the service's drivers, by name. */
  const commands: [string, number, CommandCounts][] = [];
  const measured = async (load: Parameters<typeof runLoad>[0]) => {
    const before = await counter.snapshot();
    const result = await runLoad(load);
    results.push(result);
    commands.push([result.name, result.requests, countsBetween(before, await counter.snapshot())]);
  };
  try {
    // Warm-up, not measured (as in the send bench): a round of each driver with keys of its own, so that the
    // JIT of the service and of the embedded database's JVM has compiled the paths before they are timed.
    for (const driver of drivers) {
      const secrets = await newKeys();
      results.push(
        await runLoad({
          name: `${driver.name}, warm-up round (not in the ratios)`,
          concurrency: options.concurrency,
          callsPerWorker: 100,
          serverPid: pid,
          call: (w) => driver.call(secrets[w] as string),
        }),
      );
    }
    const trivialDriver = undiciDriver("", `http://127.0.0.1:${trivial.value.trivialPort}`, () => ({
      path: "/messaging.v1.AccountService/GetMe",
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    }));
    const trivialRound = async (when: string) =>
      results.push(
        await runLoad({ name: `trivial Connect handler (no DB), ${when}`, concurrency: options.concurrency, seconds: options.seconds, serverPid: trivial.child.pid, call: () => trivialDriver.call("") }),
      );
    for (const driver of drivers) {
      // The trivial handler is measured right before and right after the REST rounds, which are compared with both
      // (their mean): this machine's speed drifts within a run, and the rounds of one protocol take half a minute.
      // Each of its rounds starts with a second of unrecorded calls (runLoad's warm-up).
      if (driver === drivers[0]) await trivialRound("before the REST rounds");
      // Within budget: each client spends its keys' budgets in turn (100 calls each), then stays on its last key.
      const keySets = await Promise.all(Array.from({ length: keysPerClient }, () => newKeys()));
      const calls = new Array<number>(options.concurrency).fill(0);
      const call = (w: number) => {
        const set = keySets[Math.min(keysPerClient - 1, Math.floor((calls[w] as number) / 100))] as string[];
        calls[w] = (calls[w] as number) + 1;
        return driver.call(set[w] as string);
      };
      const common = { concurrency: options.concurrency, serverPid: pid, call };
      await measured({ ...common, name: `${driver.name}, within budget`, callsPerWorker: 100 * keysPerClient });
      await measured({ ...common, name: `${driver.name}, over budget`, seconds: options.seconds });
      await driver.close();
      if (driver === drivers[0]) await trivialRound("after the REST rounds");
    }
    await trivialDriver.close();
    const bare = undiciDriver("", `http://127.0.0.1:${trivial.value.barePort}`, () => ({ path: "/", method: "GET" }));
    results.push(await runLoad({ name: "bare node:http", concurrency: options.concurrency, seconds: options.seconds, serverPid: trivial.child.pid, call: () => bare.call("") }));
    await bare.close();
  } finally {
    await Promise.all([stopProcess(service.child), stopProcess(trivial.child)]);
    await counter.close();
  }
  /** Requests/s of the rounds whose name starts with `name`: their mean (the trivial handler's two rounds). */
  const rps = (name: string) => {
    const rounds = results.filter((x) => x.name.startsWith(name) && !x.name.includes("warm-up"));
    return rounds.length ? rounds.reduce((sum, r) => sum + r.requests / r.seconds, 0) / rounds.length : NaN;
  };
  const ratio = (a: string, b: string) => (rps(a) / rps(b)).toFixed(2);
  return [
    `GET /v1/me, ${options.concurrency} concurrent clients; "within budget": each client spends the budget of ${keysPerClient} fresh`,
    `keys of its own in turn (100 calls each, 100/min); "over budget": ${options.seconds} s more with the spent keys (429`,
    `answers); after a warm-up round of each (one key per client; shown first, left out of the ratios)`,
    loadTable(results),
    `REST / Connect throughput: within budget ${ratio("REST GET /v1/me, within", "Connect JSON GetMe, within")}, over budget ${ratio("REST GET /v1/me, over", "Connect JSON GetMe, over")}`,
    `REST / trivial Connect handler (the mean of its rounds before and after): within budget ${ratio("REST GET /v1/me, within", "trivial")}, over budget ${ratio("REST GET /v1/me, over", "trivial")}`,
    "",
    `Database commands per request, counted ${counter.where} (heartbeats left out), by phase:`,
    table(
      ["run", "per request", "commands"],
      commands.map(([name, requests, counts]) => [name, ...commandCells(counts, requests)]),
    ),
  ].join("\n");
}

