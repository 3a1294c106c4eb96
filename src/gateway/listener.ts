import type http from "node:http";
import type http2 from "node:http2";
import type net from "node:net";
import * as httpolyglot from "@httptoolkit/httpolyglot";

/**
 * Limits of a port against slow and greedy clients (README "Limits").
 * Node answers a breach of the first two with 408 and of the header size
 * with 431, then closes the connection.
 */
export interface ListenerLimits {
  /** Time to receive a request's headers, in ms (slow-header clients). */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included, in ms. */
  requestTimeoutMs: number;
}

/** Largest request head (request line and headers), in bytes: 16 KiB, Node's default, stated. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Streams one HTTP/2 connection may have open at once. */
export const MAX_CONCURRENT_STREAMS = 100;

/** The HTTP/1.1 and HTTP/2 servers httpolyglot hands connections to. */
interface PolyglotInternals {
  /** net.Server's option, read when each socket is made. */
  allowHalfOpen: boolean;
  _httpServer: http.Server & { httpAllowHalfOpen: boolean };
  _http2Server: http2.Http2Server;
}

/**
 * One cleartext listener for HTTP/1.1 and HTTP/2 (told apart by the first
 * bytes, with httpolyglot) that answers every request it receives:
 *
 * - httpolyglot's inner HTTP/1.1 server never listens itself, so Node's
 *   checks of `headersTimeout` and `requestTimeout` (started when a server
 *   starts listening) would never run: the listener starts and stops them
 *   with the outer server. A connection that sends no byte at all is closed
 *   after `headersTimeoutMs`.
 * - A client that half-closes its socket after its request (`nc -N`,
 *   `shutdown(SHUT_WR)`) still gets the answer: sockets are half-open and
 *   the HTTP/1.1 server answers before it closes.
 * - A `CONNECT` request (a proxy request; Node's HTTP/1.1 server would drop
 *   the socket unanswered) gets `404 not_found` as a REST error.
 *
 * The two Node internals touched (the inner server's "listening" event and
 * `httpAllowHalfOpen`) are used here only.
 *
 * Returns the server and the set of its open sockets (closed ones leave it),
 * which a graceful shutdown destroys once requests in flight are done.
 */
export function createPolyglotServer(
  limits: ListenerLimits,
  onRequest: (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void,
): { server: net.Server; sockets: ReadonlySet<net.Socket> } {
  const sockets = new Set<net.Socket>();
  const server = httpolyglot.createServer(
    {
      http: {
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        maxHeaderSize: MAX_HEADER_BYTES,
        connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
      },
      http2: { settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, maxHeaderListSize: MAX_HEADER_BYTES } },
    },
    onRequest as http.RequestListener,
  ) as unknown as net.Server & PolyglotInternals;
  const h1 = server._httpServer;
  server.allowHalfOpen = true;
  h1.httpAllowHalfOpen = true;
  // httpolyglot copies every listener of the outer server onto the inner ones: each acts on its own events only.
  server.on("listening", function (this: unknown) {
    if (this === server) h1.emit("listening");
  });
  server.on("close", function (this: unknown) {
    if (this === server) h1.close(() => {});
  });
  server.on("connection", function (this: unknown, socket: net.Socket) {
    if (this !== server) return;
    sockets.add(socket);
    const silent = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, limits.headersTimeoutMs);
    silent.unref();
    socket.once("close", () => {
      clearTimeout(silent);
      sockets.delete(socket);
    });
  });
  // httpolyglot marks an HTTP/2 socket's handle as not a stream base before it hands the socket over (for
  // HTTP/2 over non-socket streams, which this listener never gets), and Node then runs the whole session
  // through a JavaScript stream wrapper: every frame read and written in JavaScript. The mark goes again
  // before the HTTP/2 server sees the socket, so the session uses the socket's handle natively; Node reads
  // the bytes httpolyglot peeked from the socket's buffer first (test/listener.test.ts).
  server._http2Server.prependListener("connection", (socket: net.Socket & { _handle?: { isStreamBase?: boolean } }) => {
    if (socket._handle && Object.hasOwn(socket._handle, "isStreamBase")) Reflect.deleteProperty(socket._handle, "isStreamBase");
  });
  h1.on("connect", (req: http.IncomingMessage, socket: net.Socket) => {
    const body = JSON.stringify({
      error: { code: "not_found", message: `No route for CONNECT ${req.url ?? ""}: this is not a proxy`, details: { method: "CONNECT" }, request_id: null },
    });
    socket.end(
      `HTTP/1.1 404 Not Found\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  return { server, sockets };
}
