import http2 from "node:http2";
import type net from "node:net";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPolyglotServer } from "../src/gateway/listener.js";

/*
 * The public port's listener (src/gateway/listener.ts): HTTP/1.1 and
 * cleartext HTTP/2 on one port, told apart by httpolyglot, with HTTP/2
 * sessions run on the socket's own handle.
 */

let server: net.Server;
let origin: string;
const handles: string[] = [];
beforeAll(async () => {
  ({ server } = createPolyglotServer({ headersTimeoutMs: 5000, requestTimeoutMs: 10_000 }, (req, res) => {
    res.setHeader("content-type", "text/plain");
    res.end(`${req.httpVersion} ${req.url}`);
  }));
  // Listeners of the outer server are also added to the inner HTTP/2 server (httpolyglot): this one sees its sessions.
  server.on("session", (session: http2.ServerHttp2Session) => {
    handles.push((session.socket as unknown as { _handle: object })._handle.constructor.name);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("one port for HTTP/1.1 and HTTP/2", () => {
  it("answers HTTP/1.1", async () => {
    const res = await fetch(`${origin}/one`);
    expect(await res.text()).toBe("1.1 /one");
  });

  it("runs an HTTP/2 session on the socket's TCP handle, the bytes httpolyglot peeked read first", async () => {
    // httpolyglot marks the socket "not a stream base", which made Node wrap it in a JavaScript stream
    // (a "JSStream" handle, every frame through JavaScript); the listener takes that mark away.
    const client = http2.connect(origin);
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          new Promise<string>((resolve, reject) => {
            const stream = client.request({ ":path": `/two/${i}` });
            let body = "";
            stream.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
            stream.on("end", () => resolve(body)).on("error", reject);
            stream.end();
          }),
        ),
      );
      expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => `2.0 /two/${i}`));
      expect(handles).toEqual(["TCP"]);
    } finally {
      client.close();
    }
  });
});
