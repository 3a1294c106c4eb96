import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { expect } from "vitest";
import type { Db } from "mongodb";
import type { GraphRequest } from "./fake-graph-api.js";
import { eventually } from "./test-service.js";

/** A console client factory for a service process's console port, as the operator with `token`. */
export function consoleClients(consolePort: number, token: string) {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${consolePort}`, httpVersion: "1.1", interceptors: [auth] });
  return <S extends DescService>(s: S) => createClient(s, transport);
}

/** An outbound message as the crash checks read it from the database. */
export interface CrashMessage {
  _id: string;
  status: string;
  credits: number;
  refund_state: string;
  send_at?: Date | null;
  sent_at?: Date | null;
  valid_until?: Date | null;
  error?: { code: number; title: string; reason?: string | null } | null;
  events_pending?: string[];
}

/** The network requests (fake Graph API sends) that carried message `id`. */
export function sendsOf(requests: readonly GraphRequest[], id: string): number {
  return requests.filter((r) => r.body?.biz_opaque_callback_data === id).length;
}

/**
 * Waits until every message of the workspace is settled (no message
 * `scheduled` or `accepted`, every refund due done, no credit change
 * pending, no event mark left), then checks what a crash must not break and
 * returns the messages:
 *
 * - every message answered (`answered`) is stored;
 * - a `sent` message reached the network exactly once; a `canceled` or
 *   `expired` one never; one failed otherwise (interrupted: the network may
 *   have it) at most once;
 * - credits: balance + the charges of unrefunded messages = the opening
 *   credits; the ledger adds up to the balance, with a spend per message
 *   and a refund per refunded one, each once;
 * - every message's final status has its event, no event is stored twice,
 *   and no message that ended failed or canceled has a `message.sent` event.
 */
export async function expectSettled(o: {
  db: Db;
  workspaceId: string;
  openingCredits: number;
  answered: readonly string[];
  requests: readonly GraphRequest[];
  timeoutMs?: number;
}): Promise<CrashMessage[]> {
  const { db, workspaceId } = o;
  const messages = db.collection<CrashMessage>("messages");
  const workspaces = db.collection<{ _id: string; credit_balance: number; credit_ops?: Record<string, unknown> }>("workspaces");
  const open = { workspace_id: workspaceId, $or: [{ status: { $in: ["scheduled", "accepted"] } }, { status: { $in: ["failed", "canceled"] }, refund_state: { $ne: "done" } }, { "events_pending.0": { $exists: true } }] } as never;
  await eventually(async () => {
    const unsettled = await messages.countDocuments(open);
    const ws = await workspaces.findOne({ _id: workspaceId });
    return unsettled === 0 && Object.keys(ws?.credit_ops ?? {}).length === 0 ? true : undefined;
  }, o.timeoutMs ?? 60_000).catch(async (err: Error) => {
    const left = await messages.find(open).toArray();
    const ws = await workspaces.findOne({ _id: workspaceId });
    throw new Error(`${err.message}: unsettled ${JSON.stringify(left)}; credit_ops ${JSON.stringify(ws?.credit_ops)}`);
  });

  const stored = await messages.find({ workspace_id: workspaceId } as never).toArray();
  const ids = new Set(stored.map((m) => m._id));
  for (const id of o.answered) expect(ids.has(id), `answered ${id} stored`).toBe(true);
  for (const m of stored) {
    expect(["sent", "failed", "canceled"], `${m._id} settled`).toContain(m.status);
    const sends = sendsOf(o.requests, m._id);
    if (m.status === "sent") expect(sends, `${m._id} sent once`).toBe(1);
    else if (m.status === "canceled" || m.error?.reason === "expired") expect(sends, `${m._id} (${m.status}) never sent`).toBe(0);
    else expect(sends, `${m._id} (${m.error?.title}) at most once`).toBeLessThanOrEqual(1);
  }

  const refunded = stored.filter((m) => m.refund_state === "done");
  const charged = stored.filter((m) => m.refund_state !== "done").reduce((sum, m) => sum + m.credits, 0);
  const balance = (await workspaces.findOne({ _id: workspaceId }))!.credit_balance;
  expect(balance + charged).toBe(o.openingCredits);
  const ledger = await db.collection<{ _id: string; kind: string; amount: number; message_id: string | null }>("credit_ledger").find({ workspace_id: workspaceId } as never).toArray();
  expect(ledger.reduce((sum, e) => sum + e.amount, 0)).toBe(balance);
  const spends = new Set(ledger.filter((e) => e.kind === "spend").map((e) => e.message_id));
  const refunds = ledger.filter((e) => e.kind === "refund").map((e) => e.message_id);
  expect(spends.size).toBe(stored.length);
  for (const m of stored) expect(spends.has(m._id)).toBe(true);
  expect([...refunds].sort()).toEqual(refunded.map((m) => m._id).sort());
  for (const m of refunded) expect(["failed", "canceled"]).toContain(m.status);

  const events = await db.collection<{ type: string; data: { message_id: string } }>("events").find({ workspace_id: workspaceId } as never).toArray();
  const seen = new Map<string, number>();
  for (const e of events) seen.set(`${e.data.message_id}:${e.type}`, (seen.get(`${e.data.message_id}:${e.type}`) ?? 0) + 1);
  for (const m of stored) expect(seen.get(`${m._id}:message.${m.status}`), `${m._id} message.${m.status}`).toBe(1);
  for (const m of stored) if (m.status !== "sent") expect(seen.has(`${m._id}:message.sent`), `${m._id} (${m.status}) without message.sent`).toBe(false);
  expect([...seen.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  return stored;
}

/**
 * A local HTTP proxy in front of `targetUrl` (the fake Graph API) that
 * forwards each request `delayMs` after it arrived and answers with the
 * target's answer: network calls that take that long, so that a process
 * killed at a chosen moment is in the middle of one. A request whose caller
 * died meanwhile still reaches the target, as a send a real network received
 * just before its caller went away.
 */
export async function startSlowNetwork(targetUrl: string, delayMs: number) {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      setTimeout(() => {
        const headers: Record<string, string> = {};
        for (const name of ["authorization", "content-type"]) if (typeof req.headers[name] === "string") headers[name] = req.headers[name];
        fetch(targetUrl + (req.url ?? ""), { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined })
          .then(async (answer) => {
            const body = Buffer.from(await answer.arrayBuffer());
            if (res.destroyed) return;
            res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json", "content-length": body.length });
            res.end(body);
          })
          .catch(() => res.destroy());
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
