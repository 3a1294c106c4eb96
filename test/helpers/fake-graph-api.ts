import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the fake Graph API received. */
export interface GraphRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: any;
}

/** What the fake answers for one send: status and JSON body. */
export type GraphAnswer = { status: number; body: unknown };

/**
 * A local HTTP server standing in for the WhatsApp Cloud API's Graph API
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/reference/messages):
 * POST /{version}/{phone_number_id}/messages answers, by default, the
 * documented success body `{"messaging_product":"whatsapp","contacts":[{"input","wa_id"}],"messages":[{"id":"wamid…"}]}`;
 * `answer` may return another answer for a request (errors, outages).
 */
export async function startFakeGraphApi(answer?: (req: GraphRequest, calls: number) => GraphAnswer | undefined) {
  const requests: GraphRequest[] = [];
  let next = 0;
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const request: GraphRequest = { method: req.method ?? "", path: req.url ?? "", authorization: req.headers.authorization, body: text ? JSON.parse(text) : null };
      requests.push(request);
      const calls = requests.filter((r) => r.body?.biz_opaque_callback_data === request.body?.biz_opaque_callback_data).length;
      const custom = answer?.(request, calls);
      const to = request.body?.to;
      const reply = custom ?? {
        status: 200,
        body: { messaging_product: "whatsapp", contacts: [{ input: to, wa_id: to }], messages: [{ id: `wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTc${next++}` }] },
      };
      const body = JSON.stringify(reply.body);
      res.writeHead(reply.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
