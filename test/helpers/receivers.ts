import http, { type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type net from "node:net";

/** A request a receiver got: headers, the raw body as sent, and when. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The exact bytes of the body, as text. */
  body: string;
  /** Date.now() when the whole body had arrived. */
  at: number;
}

/** Answers a request; `count` is its position among the receiver's requests (1-based). */
export type ReceiverBehavior = (req: ReceivedRequest, res: ServerResponse, count: number) => void;

/** A local webhook receiver on a random loopback port. */
export interface Receiver {
  /** http://127.0.0.1:<port>/hook */
  readonly url: string;
  readonly port: number;
  /** Every request received, in order of arrival. */
  readonly requests: ReceivedRequest[];
  /** Changes how later requests are answered. */
  behave(behavior: ReceiverBehavior): void;
  close(): Promise<void>;
}

/** Answers 200 with a small JSON body. */
export const answerOk: ReceiverBehavior = (_req, res) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end('{"received":true}');
};

/** Answers `status` with a body naming it. */
export const answerStatus =
  (status: number): ReceiverBehavior =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "text/plain" });
    res.end(`status ${status} from the test receiver`);
  };

/** Answers 500 to the first `n` requests, then 200. */
export const failTimes =
  (n: number): ReceiverBehavior =>
  (req, res, count) =>
    (count <= n ? answerStatus(500) : answerOk)(req, res, count);

/** Answers 301 to another place (which must not be followed). */
export const answerRedirect: ReceiverBehavior = (_req, res) => {
  res.writeHead(301, { location: "http://127.0.0.1:1/elsewhere" });
  res.end();
};

/** Closes the connection without answering. */
export const dropConnection: ReceiverBehavior = (_req, res) => {
  res.socket?.destroy();
};

/** Sends the status and headers at once, then the body only after `ms`. */
export const slowBody =
  (ms: number): ReceiverBehavior =>
  (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.write("slow…");
    const timer = setTimeout(() => res.end("done"), ms);
    res.on("close", () => clearTimeout(timer));
  };

/** Starts a receiver (answering 200 unless told otherwise). */
export async function startReceiver(behavior: ReceiverBehavior = answerOk): Promise<Receiver> {
  let current = behavior;
  const requests: ReceivedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const received: ReceivedRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      };
      requests.push(received);
      current(received, res, requests.length);
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    requests,
    behave(next) {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
