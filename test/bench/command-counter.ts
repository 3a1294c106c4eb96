import net from "node:net";
import { MongoClient } from "mongodb";
import { DATABASE_APP_NAME } from "../../src/server.js";

/** Commands seen, by "<command> <collection>" (for example "insert messages"). */
export type CommandCounts = Map<string, number>;

/**
 * The database commands of the service under measure: counted by the
 * embedded database itself where the bench runs on it, through a relay on
 * the wire otherwise (startCommandCounter).
 */
export interface CommandCounter {
  /** Connection string to give the service. */
  readonly uri: string;
  /** Where the commands are counted, for the tables' titles ("by the embedded database", "on the wire"). */
  readonly where: string;
  /** What `times` measures, as a column header: the database's time handling a command, or the wait for its answer. */
  readonly timeHeader: string;
  /** The counts so far. */
  snapshot(): Promise<CommandCounts>;
  /** Time per command so far, in ms, by the same keys (see `timeHeader`). */
  times(): Promise<CommandCounts>;
  close(): Promise<void>;
}

/** Commands of the driver's connection upkeep (handshakes, heartbeats, sessions), not of the work measured. */
const UPKEEP = /^(hello|isMaster|ismaster|ping|endSessions|buildInfo)\b/;

/**
 * Commands on the simulated network's own records (`simulator_reports`, its
 * media): the stand-in for WhatsApp, whose work is not the service's (on the
 * real network they do not exist); counted apart (networkCommands).
 */
const SIMULATED_NETWORK = /^\w+ simulator_/;

/** The counts without the driver's upkeep and the simulated network's own, largest first. */
export function workCommands(counts: CommandCounts): [string, number][] {
  return [...counts].filter(([key]) => !UPKEEP.test(key) && !SIMULATED_NETWORK.test(key)).sort((a, b) => b[1] - a[1]);
}

/** The simulated network's own commands (see SIMULATED_NETWORK), in all. */
export function networkCommands(counts: CommandCounts): number {
  return [...counts].filter(([key]) => SIMULATED_NETWORK.test(key)).reduce((sum, [, n]) => sum + n, 0);
}

/**
 * A run's commands as two table cells: per unit of work (request, message,
 * delivery) and the list by command, largest first, upkeep left out.
 */
export function commandCells(counts: CommandCounts, units: number): [perUnit: string, list: string] {
  const rows = workCommands(counts);
  const total = rows.reduce((sum, [, n]) => sum + n, 0);
  return [(total / units).toFixed(3), rows.map(([key, n]) => `${key} ${n}`).join(", ")];
}

/** Counts of `after` minus `before`, per key. */
export function countsBetween(before: CommandCounts, after: CommandCounts): CommandCounts {
  const diff: CommandCounts = new Map();
  for (const [key, n] of after) {
    const d = n - (before.get(key) ?? 0);
    if (d > 0) diff.set(key, d);
  }
  return diff;
}

/** Reads a BSON document's first element: its name and, when a string, its value. */
function firstElement(doc: Buffer, at: number): { name: string; value: string } {
  const type = doc[at + 4];
  const nameEnd = doc.indexOf(0, at + 5);
  if (nameEnd < 0) return { name: "?", value: "" };
  const name = doc.toString("utf8", at + 5, nameEnd);
  if (type !== 0x02 || nameEnd + 5 > doc.length) return { name, value: "" };
  const length = doc.readInt32LE(nameEnd + 1);
  return { name, value: doc.toString("utf8", nameEnd + 5, Math.min(doc.length, nameEnd + 4 + length)) };
}

/** Bytes of a wire message's start that are kept to read its header and the command's first element. */
const HEAD_BYTES = 512;

/**
 * A reader of MongoDB wire messages (each starts with its int32 length) in
 * a stream of chunks: calls `onMessage` with the first HEAD_BYTES bytes of
 * each message (all of a shorter one) and skips the rest without copying,
 * so that the relay costs little beside the service it measures.
 */
function messageHeads(onMessage: (head: Buffer) => void): (chunk: Buffer) => void {
  let head = Buffer.alloc(0);
  let skip = 0;
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - at);
        skip -= n;
        at += n;
        continue;
      }
      const known = head.length >= 4 ? Math.min(head.readInt32LE(0), HEAD_BYTES) : 4;
      const take = Math.min(known - head.length, chunk.length - at);
      head = Buffer.concat([head, chunk.subarray(at, at + take)]);
      at += take;
      if (head.length < 4 || head.length < Math.min(head.readInt32LE(0), HEAD_BYTES)) continue;
      const length = head.readInt32LE(0);
      if (head.length >= 16) onMessage(head);
      skip = length - head.length;
      head = Buffer.alloc(0);
    }
  };
}

/**
 * Counts the service's commands (those of connections whose handshake names
 * DATABASE_APP_NAME). The embedded database counts what it handles, by
 * application, and answers `{embeddedCommandCounts: <application>}`
 * (src/store/embedded-mongo/CommandCounts.java): the service then talks to
 * it directly, as it does when deployed, and `times` is the database's
 * handling time. Any other server is counted through a relay
 * (startCommandRelay), whose second hop the service then pays.
 */
export async function startCommandCounter(mongodbUri: string): Promise<CommandCounter> {
  const client = await new MongoClient(mongodbUri, { appName: "bench-command-counter" }).connect();
  const read = async () =>
    (await client.db("admin").command({ embeddedCommandCounts: DATABASE_APP_NAME })) as unknown as { commands: { name: string; count: number; nanos: number }[] };
  try {
    await read();
  } catch {
    await client.close();
    return startCommandRelay(mongodbUri);
  }
  return {
    uri: mongodbUri,
    where: "by the embedded database",
    timeHeader: "mean ms handling",
    snapshot: async () => new Map((await read()).commands.map((c) => [c.name, Number(c.count)])),
    times: async () => new Map((await read()).commands.map((c) => [c.name, Number(c.nanos) / 1e6])),
    close: () => client.close(),
  };
}

/**
 * Starts a TCP relay on a loopback port in front of the database at
 * `mongodbUri` that counts what the service sends, command by command, on
 * the wire (MongoDB's OP_MSG: the first element of the body names the
 * command and, for CRUD commands, the collection). A bulk insert or update
 * is one command however many documents it carries: that is what the
 * benchmarks' write budget counts. Handshakes and heartbeats (hello,
 * isMaster, ping) are counted too, under their own names.
 */
async function startCommandRelay(mongodbUri: string): Promise<CommandCounter> {
  const target = new URL(mongodbUri.replace(/^mongodb:/, "http:"));
  const counts: CommandCounts = new Map();
  const waits: CommandCounts = new Map();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 27017), target.hostname);
    sockets.add(client).add(upstream);
    const asked = new Map<number, { key: string; at: number }>();
    const onCommand = messageHeads((head) => {
      // OP_MSG: header (16), flagBits (4), then section kind 0: the command document.
      if (head.readInt32LE(12) !== 2013 || head.length < 26 || head[20] !== 0) return;
      const { name, value } = firstElement(head, 21);
      const key = value ? `${name} ${value}` : name;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      asked.set(head.readInt32LE(4), { key, at: performance.now() });
    });
    const onAnswer = messageHeads((head) => {
      const question = asked.get(head.readInt32LE(8));
      if (!question) return;
      asked.delete(head.readInt32LE(8));
      waits.set(question.key, (waits.get(question.key) ?? 0) + performance.now() - question.at);
    });
    client.on("data", (chunk: Buffer) => {
      upstream.write(chunk);
      onCommand(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      client.write(chunk);
      onAnswer(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true`,
    where: "on the wire (a relay in front of the database)",
    timeHeader: "mean wait ms",
    snapshot: () => Promise.resolve(new Map(counts)),
    times: () => Promise.resolve(new Map(waits)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
