import net from "node:net";
import { Semaphore } from "async-mutex";

/**
 * A MongoDB wire-protocol proxy placed in front of the embedded FerretDB so
 * that single-document updates are atomic, as MongoDB guarantees.
 *
 * Why: FerretDB v1 with its SQLite backend applies an update as a read, a
 * change in Go and a write, in separate transactions. Two connections that
 * `$inc` the same document at once lose updates (measured: 1,000 concurrent
 * `$inc` of one counter left it at 18). The service relies on atomic
 * conditional updates for credits, rate windows and state transitions
 * (DESIGN.md §5), so every process reaches FerretDB through this gate:
 * commands that write run one at a time, commands that only read run
 * together. Against a real MongoDB (MONGODB_URI) there is no gate.
 *
 * Framing follows the MongoDB wire protocol: each message starts with its
 * int32 length; OP_MSG (opcode 2013) carries flag bits (moreToCome = 2) and a
 * body section whose first key names the command.
 */
export interface CommandGate {
  /** Port the gate listens on (127.0.0.1). */
  port: number;
  /** Stops listening and closes every proxied connection. */
  close(): Promise<void>;
}

const OP_MSG = 2013;
const OP_COMPRESSED = 2012;
const MORE_TO_COME = 2;
/** Weight of a write in the semaphore: all of it, so it runs alone. */
const WRITE_WEIGHT = 64;
/**
 * Application name (the driver's `appName`, sent in each connection's
 * handshake) of connections whose commands the gate admits ahead of the
 * others waiting. Against a real MongoDB it only names the connections.
 */
export const PRIORITY_APP_NAME = "msgsvc-priority";
const PRIORITY_MARK = Buffer.from(PRIORITY_APP_NAME, "latin1");

/** Commands that only read; anything else is treated as a write. */
const readCommands = new Set([
  "find",
  "getMore",
  "count",
  "distinct",
  "aggregate",
  "listCollections",
  "listIndexes",
  "listDatabases",
  "killCursors",
  "hello",
  "isMaster",
  "ismaster",
  "ping",
  "buildInfo",
  "buildinfo",
  "getParameter",
  "endSessions",
  "collStats",
  "dbStats",
  "serverStatus",
  "connectionStatus",
  "saslStart",
  "saslContinue",
]);

/** Name of the command of an OP_MSG frame (first key of its body), or undefined. */
function commandName(frame: Buffer): string | undefined {
  if (frame.readInt32LE(12) !== OP_MSG) return undefined;
  // header (16) + flagBits (4) + section kind (1) + document length (4) + element type (1)
  const start = 26;
  const end = frame.indexOf(0, start);
  return end > start ? frame.toString("latin1", start, end) : undefined;
}

function hasMoreToCome(frame: Buffer): boolean {
  return frame.readInt32LE(12) === OP_MSG && (frame.readUInt32LE(16) & MORE_TO_COME) !== 0;
}

function isWrite(frame: Buffer): boolean {
  if (frame.readInt32LE(12) === OP_COMPRESSED) return true;
  const name = commandName(frame);
  if (name === undefined) return true;
  if (name === "aggregate") return frame.includes("$out") || frame.includes("$merge");
  return !readCommands.has(name);
}

/** Calls `onFrame` for each complete wire message arriving on `socket`. */
function readFrames(socket: net.Socket, onFrame: (frame: Buffer) => void): void {
  let pending: Buffer = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const length = pending.readInt32LE(0);
      if (pending.length < length) break;
      onFrame(pending.subarray(0, length));
      pending = pending.subarray(length);
    }
  });
}

/**
 * Starts a gate on a free loopback port that forwards to FerretDB at
 * 127.0.0.1:`upstreamPort`. Each client connection gets its own upstream
 * connection (cursors and sessions stay per connection); its requests are
 * forwarded in order, each after the semaphore admits it. Connections that
 * introduce themselves with the priority application name are admitted
 * before the others that wait (new events' webhook writes, so that a backlog
 * of retries does not delay them).
 */
export async function startCommandGate(upstreamPort: number): Promise<CommandGate> {
  const semaphore = new Semaphore(WRITE_WEIGHT);
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(upstreamPort, "127.0.0.1");
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    sockets.add(client).add(upstream);
    let replyArrived: (() => void) | undefined;
    let queue = Promise.resolve();
    let priority: number | undefined;

    readFrames(upstream, (frame) => {
      client.write(frame);
      if (!hasMoreToCome(frame) && replyArrived) {
        const done = replyArrived;
        replyArrived = undefined;
        done();
      }
    });
    readFrames(client, (frame) => {
      priority ??= frame.includes(PRIORITY_MARK) ? 1 : 0; // the first frame is the handshake
      const weight = isWrite(frame) ? WRITE_WEIGHT : 1;
      queue = queue.then(() =>
        semaphore.runExclusive(
          () =>
            new Promise<void>((resolve) => {
              if (upstream.destroyed) return resolve();
              if (hasMoreToCome(frame)) {
                upstream.write(frame);
                return resolve();
              }
              replyArrived = resolve;
              upstream.write(frame);
            }),
          weight,
          priority,
        ),
      );
    });

    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      replyArrived?.();
      replyArrived = undefined;
    };
    for (const s of [client, upstream]) {
      s.on("close", closeBoth);
      s.on("error", closeBoth);
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
