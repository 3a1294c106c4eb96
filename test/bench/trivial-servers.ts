import http from "node:http";
import type net from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AccountService } from "../../gen/messaging/v1/account_pb.js";

/*
 * Reference servers for the benchmark, in their own process: a trivial
 * Connect-node unary handler (no database, no interceptors: the framework's
 * ceiling) and bare node:http answering constant JSON. Prints their ports as
 * one JSON line.
 */
const body = JSON.stringify({ account_id: "00000000-0000-4000-8000-000000000000", rate_limit_per_min: 30 });
const trivial = http.createServer(
  connectNodeAdapter({
    routes: (router) =>
      router.service(AccountService, {
        getMe: () => ({ accountId: "00000000-0000-4000-8000-000000000000", rateLimitPerMin: 30 }),
      }),
  }),
);
const bare = http.createServer((_req, res) => {
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
});
const listen = (server: http.Server) =>
  new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)));
const [trivialPort, barePort] = await Promise.all([listen(trivial), listen(bare)]);
process.stdout.write(`${JSON.stringify({ trivialPort, barePort })}\n`);
