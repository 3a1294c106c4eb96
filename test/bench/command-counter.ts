import net from "node:net";

/** Commands seen, by "<command> <collection>" (for example "insert messages"). */
export type CommandCounts = Map<string, number>;

/** A counting relay between the service and its database. */
export interface CommandCounter {
  /** Connection string to give the service instead of the database's. */
  readonly uri: string;
  /** A copy of the counts so far. */
  snapshot(): CommandCounts;
  /** Time spent waiting for the database's answers so far, in ms, by the same keys. */
  waited(): CommandCounts;
  close(): Promise<void>;
}

/** Commands of the driver's connection upkeep (handshakes, heartbeats, sessions), not of the work measured. */
const UPKEEP = /^(hello|isMaster|ismaster|ping|endSessions|buildInfo)\b/;

/** The counts without the driver's upkeep, largest first. */
export function workCommands(counts: CommandCounts): [string, number][] {
  return [...counts].filter(([key]) => !UPKEEP.test(key)).sort((a, b) => b[1] - a[1]);
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
  const name = doc.toString("utf8", at + 5, nameEnd);
  if (type !== 0x02) return { name, value: "" };
  const length = doc.readInt32LE(nameEnd + 1);
  return { name, value: doc.toString("utf8", nameEnd + 5, nameEnd + 4 + length) };
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
export async function startCommandCounter(mongodbUri: string): Promise<CommandCounter> {
  const target = new URL(mongodbUri.replace(/^mongodb:/, "http:"));
  const counts: CommandCounts = new Map();
  const waits: CommandCounts = new Map();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 27017), target.hostname);
    sockets.add(client).add(upstream);
    let pending: Buffer = Buffer.alloc(0);
    let answers: Buffer = Buffer.alloc(0);
    const asked = new Map<number, { key: string; at: number }>();
    client.on("data", (chunk: Buffer) => {
      upstream.write(chunk);
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= 16) {
        const length = pending.readInt32LE(0);
        if (pending.length < length) break;
        const opCode = pending.readInt32LE(12);
        // OP_MSG: header (16), flagBits (4), then section kind 0: the command document.
        if (opCode === 2013 && pending[20] === 0) {
          const { name, value } = firstElement(pending, 21);
          const key = value ? `${name} ${value}` : name;
          counts.set(key, (counts.get(key) ?? 0) + 1);
          asked.set(pending.readInt32LE(4), { key, at: performance.now() });
        }
        pending = pending.subarray(length);
      }
    });
    upstream.on("data", (chunk: Buffer) => {
      client.write(chunk);
      answers = answers.length === 0 ? chunk : Buffer.concat([answers, chunk]);
      while (answers.length >= 16) {
        const length = answers.readInt32LE(0);
        if (answers.length < length) break;
        const question = asked.get(answers.readInt32LE(8));
        if (question) {
          asked.delete(answers.readInt32LE(8));
          waits.set(question.key, (waits.get(question.key) ?? 0) + performance.now() - question.at);
        }
        answers = answers.subarray(length);
      }
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
    snapshot: () => new Map(counts),
    waited: () => new Map(waits),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
