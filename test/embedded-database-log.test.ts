import { Writable } from "node:stream";
import { MongoClient } from "mongodb";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/shared/logger.js";
import { createJavaLogReader, type JavaLogRecord } from "../src/store/embedded-mongo-log.js";
import { startEmbeddedMongo } from "../src/store/embedded-mongo.js";
import { eventually } from "./helpers/test-service.js";

/*
 * The embedded database's log in the service's log: real faults only, one
 * line each, the Java stack only at debug level (README "Database").
 */

/** A logger at `level` whose lines are kept, parsed. */
function capturingLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger(level, "embedded-log-test", sink), lines };
}

describe("the embedded database's log", () => {
  for (const level of ["info", "debug"]) {
    it(`is silent on errors a command is answered with, and logs a fault of the server as one line (${level}: ${level === "debug" ? "with" : "without"} its stack)`, async () => {
      const { logger, lines } = capturingLogger(level);
      const db = await startEmbeddedMongo({ kind: "memory" }, logger);
      const client = await new MongoClient(db.uri).connect();
      try {
        const things = client.db("log").collection<{ _id: number }>("things");
        await things.insertOne({ _id: 1 });
        // Errors the client is answered with, as MongoDB answers them: not the server's faults.
        await expect(things.dropIndex("no_such_index")).rejects.toMatchObject({ code: 27 });
        await expect(things.insertOne({ _id: 1 })).rejects.toMatchObject({ code: 11000 });
        // A fault of the library (it casts the filter without checking it): answered "Unknown error", and logged.
        await expect(client.db("log").command({ find: "things", filter: 7 })).rejects.toThrow(/Unknown error/);
        const fault = await eventually(async () => lines.find((l) => l.source === "embedded-database"));
        expect(fault.level).toBe(50);
        expect(fault.msg).toMatch(/^command find failed: java\.lang\.ClassCastException: /);
        expect(String(fault.msg)).not.toContain("\n");
        if (level === "debug") expect(fault.stack).toMatch(/^at de\.bwaldvogel\.mongo\./);
        else expect(fault.stack).toBeUndefined();
        expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([fault]);
      } finally {
        await client.close();
        await db.stop();
      }
    });
  }
});

describe("reading the JVM's stderr into records", () => {
  /** The records `text`'s lines make. */
  function read(text: string): JavaLogRecord[] {
    const records: JavaLogRecord[] = [];
    const reader = createJavaLogReader((r) => records.push(r));
    for (const line of text.split("\n")) reader.line(line);
    reader.end();
    return records;
  }

  it("makes one record of a log line and its exception, the exception's first line in the message", () => {
    const records = read(
      [
        "[nioEventLoopGroup-3-1] ERROR de.bwaldvogel.mongo.wire.MongoExceptionHandler - exception for client 5a1b",
        "io.netty.handler.codec.DecoderException: bad frame",
        "\tat io.netty.handler.codec.ByteToMessageDecoder.callDecode(ByteToMessageDecoder.java:499)",
        "Caused by: java.lang.IllegalStateException: too long",
        "\t... 12 more",
        "[main] WARN de.bwaldvogel.mongo.backend.aggregation.Aggregation - Non-empty cursor is not yet implemented. Ignoring.",
      ].join("\n"),
    );
    expect(records).toEqual([
      {
        level: "error",
        logger: "de.bwaldvogel.mongo.wire.MongoExceptionHandler",
        msg: "exception for client 5a1b: io.netty.handler.codec.DecoderException: bad frame",
        stack: [
          "\tat io.netty.handler.codec.ByteToMessageDecoder.callDecode(ByteToMessageDecoder.java:499)",
          "Caused by: java.lang.IllegalStateException: too long",
          "\t... 12 more",
        ],
      },
      { level: "warn", logger: "de.bwaldvogel.mongo.backend.aggregation.Aggregation", msg: "Non-empty cursor is not yet implemented. Ignoring." },
    ]);
  });

  it("reads a client that went away as debug, the JVM's own output as a warning, an uncaught exception as an error", () => {
    const records = read(
      [
        "[nioEventLoopGroup-3-2] ERROR de.bwaldvogel.mongo.wire.MongoExceptionHandler - exception for client 7c2d",
        "java.net.SocketException: Connection reset",
        "\tat java.base/sun.nio.ch.SocketChannelImpl.throwConnectionReset(SocketChannelImpl.java:394)",
        "OpenJDK 64-Bit Server VM warning: Sharing is only supported for boot loader classes",
        'Exception in thread "h2-writer" java.lang.IllegalStateException: store closed',
        "\tat org.h2.mvstore.MVStore.checkOpen(MVStore.java:1)",
      ].join("\n"),
    );
    expect(records.map((r) => [r.level, r.msg])).toEqual([
      ["debug", "exception for client 7c2d: java.net.SocketException: Connection reset"],
      ["warn", "OpenJDK 64-Bit Server VM warning: Sharing is only supported for boot loader classes"],
      ["error", 'Exception in thread "h2-writer" java.lang.IllegalStateException: store closed'],
    ]);
    expect(records[2]?.stack).toEqual(["\tat org.h2.mvstore.MVStore.checkOpen(MVStore.java:1)"]);
  });

  it("ends a record when no line follows for a while", async () => {
    const records: JavaLogRecord[] = [];
    const reader = createJavaLogReader((r) => records.push(r), 20);
    reader.line("[main] INFO embedded-database - converted 3 documents of /data/database.mv to BSON storage");
    await eventually(async () => records[0]);
    expect(records).toEqual([{ level: "info", logger: "embedded-database", msg: "converted 3 documents of /data/database.mv to BSON storage" }]);
  });

  it("reads the rest of a trace that comes after its record ended as debug, never as the JVM's own warning", async () => {
    const records: JavaLogRecord[] = [];
    const reader = createJavaLogReader((r) => records.push(r), 20);
    reader.line("[nioEventLoopGroup-3-1] WARN io.netty.channel.DefaultChannelPipeline - An exceptionCaught() event was fired");
    reader.line("java.lang.IllegalStateException: channel closed");
    await eventually(async () => records[0]);
    reader.line("\tat io.netty.channel.nio.NioEventLoop.run(NioEventLoop.java:1)");
    reader.line("Caused by: java.io.IOException: closed");
    reader.end();
    expect(records.map((r) => r.level)).toEqual(["warn", "debug", "debug"]);
    expect(records[1]?.msg).toBe("at io.netty.channel.nio.NioEventLoop.run(NioEventLoop.java:1)");
  });
});
