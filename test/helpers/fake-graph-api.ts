import { createHash } from "node:crypto";
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

/** A medium the fake serves: its bytes, type, and the `sha256` its media endpoint states (base64 of the bytes' SHA-256 unless given). */
export type FakeMedium = { bytes: Buffer; mimeType: string; sha256?: string; /** Answer the first n metadata requests with 503 (an outage). */ failFirst?: number };

/**
 * A local HTTP server standing in for the WhatsApp Cloud API's Graph API
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/reference/messages):
 * POST /{version}/{phone_number_id}/messages answers, by default, the
 * documented success body `{"messaging_product":"whatsapp","contacts":[{"input","wa_id"}],"messages":[{"id":"wamid…"}]}`;
 * `answer` may return another answer for a request (errors, outages).
 * Media put in `media` are served as
 * https://developers.facebook.com/docs/whatsapp/cloud-api/reference/media#download-media
 * describes: GET /{version}/{media-id} answers
 * `{"messaging_product","url","mime_type","sha256","file_size","id"}`, and GET of that url
 * with the same bearer token answers the bytes (401 without it, 404 for unknown ids);
 * `/cdn/{name}` serves `cdn` entries without a token (WhatsApp's CDN).
 * A business phone number's throughput level, the node's `throughput` field
 * (https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput):
 * GET /{version}/{phone-number-id}?fields=throughput with the bearer token answers
 * `{"throughput":{"level":"STANDARD"},"id":"…"}` with the level put in `throughput`
 * under the id, or the answer put there (errors, outages); 401 (code 190) without
 * the token, and for an id not put there 400 (code 100), as Graph answers for an
 * object that does not exist.
 */
export async function startFakeGraphApi(answer?: (req: GraphRequest, calls: number) => GraphAnswer | undefined) {
  const requests: GraphRequest[] = [];
  const media = new Map<string, FakeMedium>();
  const cdn = new Map<string, Buffer>();
  /** By phone number ID: its throughput level ("STANDARD", "HIGH", "NOT_APPLICABLE"), or what to answer instead. */
  const throughput = new Map<string, string | GraphAnswer>();
  let next = 0;
  let base = "";
  const server: Server = createServer((req: IncomingMessage, res) => {
    if (req.method === "GET") {
      requests.push({ method: "GET", path: req.url ?? "", authorization: req.headers.authorization, body: null });
      const send = (status: number, type: string, body: Buffer | string) => {
        res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
        res.end(body);
      };
      const path = req.url ?? "";
      const level = /^\/v[\d.]+\/([^/?]+)\?fields=throughput$/.exec(path);
      if (level) {
        const id = decodeURIComponent(level[1]!);
        if (req.headers.authorization !== "Bearer EAAG-test-access-token") {
          return send(401, "application/json", JSON.stringify({ error: { message: "Invalid OAuth access token", type: "OAuthException", code: 190 } }));
        }
        const known = throughput.get(id);
        if (known === undefined) {
          const message = `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`;
          return send(400, "application/json", JSON.stringify({ error: { message, type: "GraphMethodException", code: 100, error_subcode: 33, fbtrace_id: "AbC" } }));
        }
        if (typeof known !== "string") return send(known.status, "application/json", JSON.stringify(known.body));
        return send(200, "application/json", JSON.stringify({ throughput: { level: known }, id }));
      }
      const cdnFile = /^\/cdn\/(.+)$/.exec(path);
      if (cdnFile) return cdn.has(cdnFile[1]!) ? send(200, "application/octet-stream", cdn.get(cdnFile[1]!)!) : send(404, "text/plain", "not found");
      const download = /^\/media-download\/([^/?]+)/.exec(path);
      const info = /^\/v[\d.]+\/([^/?]+)$/.exec(path);
      const medium = media.get(decodeURIComponent((download ?? info)?.[1] ?? ""));
      if (!medium) return send(404, "application/json", JSON.stringify({ error: { message: "(#100) Invalid parameter", type: "OAuthException", code: 100 } }));
      if (req.headers.authorization !== "Bearer EAAG-test-access-token") return send(401, "application/json", JSON.stringify({ error: { message: "Invalid OAuth access token", code: 190 } }));
      if (download) return send(200, medium.mimeType, medium.bytes);
      if (medium.failFirst) {
        medium.failFirst--;
        return send(503, "application/json", JSON.stringify({ error: { message: "(#131016) Service unavailable", code: 131016 } }));
      }
      const id = info![1]!;
      return send(200, "application/json", JSON.stringify({
        messaging_product: "whatsapp",
        url: `${base}/media-download/${id}?ext=1700000000&hash=ATsAbC`,
        mime_type: medium.mimeType,
        sha256: medium.sha256 ?? createHash("sha256").update(medium.bytes).digest("base64"),
        file_size: medium.bytes.length,
        id,
      }));
    }
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
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    requests,
    media,
    cdn,
    throughput,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
