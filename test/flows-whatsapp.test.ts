import type { StoredEvent } from "../src/events/event-bus.js";
import { createCipheriv, createHash, createHmac, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest } from "./helpers/clients.js";
import { startFakeGraphApi } from "./helpers/fake-graph-api.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createTestService, eventually, type TestService } from "./helpers/test-service.js";

/*
 * Form submissions through the WhatsApp Cloud API adapter, against a local
 * stand-in for the Graph API, with payloads as Meta documents them:
 * - the flow response message (interactive nfm_reply with response_json and
 *   context.id of the message that carried the form):
 *   https://developers.facebook.com/docs/whatsapp/flows/guides/receiveflowresponse
 * - uploaded media in the response message ({file_name, mime_type, sha256, id})
 *   and the encrypted form ({media_id, cdn_url, file_name, encryption_metadata})
 *   with its decryption steps: https://developers.facebook.com/docs/whatsapp/flows/reference/media_upload
 * - media download (GET /{media-id} for the url, then GET the url with the token):
 *   https://developers.facebook.com/docs/whatsapp/cloud-api/reference/media#download-media
 * - signatures: https://developers.facebook.com/docs/graph-api/webhooks/getting-started
 */

const APP_SECRET = "test-app-secret-0123456789";
const PHONE_NUMBER_ID = "106540352242922";
const DISPLAY_NUMBER = "15550783881";
const FLOW_ID = "1197715005513101";

let t: TestService;
let graph: Awaited<ReturnType<typeof startFakeGraphApi>>;
let key: { id: string; secret: string };
let senderId: string;
let formTemplateId: string;

beforeAll(async () => {
  graph = await startFakeGraphApi();
  t = await createTestService({
    config: {
      ...FAST_MESSAGING,
      logLevel: "error",
      network: "whatsapp",
      whatsappGraphUrl: graph.url,
      whatsappGraphVersion: "v23.0",
      whatsappAccessToken: "EAAG-test-access-token",
      whatsappAppSecret: APP_SECRET,
      whatsappVerifyToken: "verify-token-0123",
      flowFileFetchRetryBaseMs: 20,
    },
  });
  const workspaceId = await t.createWorkspace("WhatsApp forms", 50);
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "flow_responses:read"] });
  senderId = await createSender(t, workspaceId, DISPLAY_NUMBER, PHONE_NUMBER_ID);
  formTemplateId = await createTemplate(t, workspaceId, { name: "signup_form", body: "Hi {{name}}, please sign up", flowId: FLOW_ID });
});
afterAll(async () => {
  await t.close();
  await graph.close();
});

const sha256 = (b: Buffer, encoding: "hex" | "base64" = "hex") => createHash("sha256").update(b).digest(encoding);

/** Sends the form to `to` and resolves to the message id and the wamid the Graph API gave it. */
async function sendForm(to: string, token: string): Promise<{ id: string; wamid: string }> {
  const res = await rest(t.publicUrl, "POST", "/v1/messages", {
    key: key.secret,
    body: { to, sender: senderId, template: { id: formTemplateId, variables: { name: "Ada" }, flow: { token } } },
  });
  const id: string = res.json.message_id;
  const message = await eventually(async () => (await t.service.db.collection("messages").findOne({ _id: id as never, wa_message_id: { $ne: null } })) ?? undefined);
  return { id, wamid: message.wa_message_id };
}

/** A flow response message webhook as in Meta's "Receiving Flow Response" guide. */
function nfmReply(from: string, wamid: string, responseJson: Record<string, unknown>, contextId?: string) {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: "102290129340398",
        changes: [
          {
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: DISPLAY_NUMBER, phone_number_id: PHONE_NUMBER_ID },
              contacts: [{ profile: { name: "Ada" }, wa_id: from }],
              messages: [
                {
                  ...(contextId ? { context: { from: DISPLAY_NUMBER, id: contextId } } : {}),
                  from,
                  id: wamid,
                  type: "interactive",
                  interactive: { type: "nfm_reply", nfm_reply: { name: "flow", body: "Sent", response_json: JSON.stringify(responseJson) } },
                  timestamp: "1763862000",
                },
              ],
            },
            field: "messages",
          },
        ],
      },
    ],
  };
}

/** Posts a callback signed as Meta signs it (X-Hub-Signature-256). */
function callback(payload: unknown) {
  const raw = JSON.stringify(payload);
  const sig = `sha256=${createHmac("sha256", APP_SECRET).update(raw).digest("hex")}`;
  return rest(t.publicUrl, "POST", "/network/whatsapp/webhook", { rawBody: raw, headers: { "x-hub-signature-256": sig, "content-type": "application/json" } });
}

/** Waits for flow.completed of the submission with network id `wamid` and returns its data. */
async function completedFor(wamid: string) {
  const submission = await eventually(async () => (await t.service.db.collection("messages").findOne({ wa_message_id: wamid, direction: "inbound" })) ?? undefined);
  const event = await eventually(async () => (await t.service.db.collection<StoredEvent>("events").findOne({ type: "flow.completed", "data.message_id": submission._id })) ?? undefined);
  return JSON.parse(event.body).data;
}

/** Encrypts `plain` as a flow endpoint receives media: AES-256-CBC, then the first 10 bytes of HMAC-SHA256(hmac_key, iv ‖ ciphertext). */
function encryptForCdn(plain: Buffer) {
  const [key, iv, hmacKey] = [randomBytes(32), randomBytes(16), randomBytes(32)];
  const cipher = createCipheriv("aes-256-cbc", key, iv);
  const ciphertext = Buffer.concat([cipher.update(plain), cipher.final()]);
  const hmac10 = createHmac("sha256", hmacKey).update(iv).update(ciphertext).digest().subarray(0, 10);
  const cdnFile = Buffer.concat([ciphertext, hmac10]);
  return {
    cdnFile,
    metadata: {
      encrypted_hash: sha256(cdnFile, "base64"),
      iv: iv.toString("base64"),
      encryption_key: key.toString("base64"),
      hmac_key: hmacKey.toString("base64"),
      plaintext_hash: sha256(plain, "base64"),
    },
  };
}

describe("an nfm_reply with uploaded media", () => {
  it("is traced through its token and context, its photo fetched from the Graph API with the token, and flow.completed fires", async () => {
    const form = await sendForm("16505551234", "signup-flow-1");
    const photo = randomBytes(1024 * 1024 + 3);
    graph.media.set("3631120727156756", { bytes: photo, mimeType: "image/jpeg" });
    const response = {
      flow_token: "signup-flow-1",
      name: "John",
      photo_picker: [{ file_name: "IMG_5237.jpg", mime_type: "image/jpeg", sha256: sha256(photo, "base64"), id: "3631120727156756" }],
    };
    const res = await callback(nfmReply("16505551234", "wamid.FLOW1", response, form.wamid));
    expect(res.status).toBe(200);
    const data = await completedFor("wamid.FLOW1");
    expect(data).toMatchObject({
      from: "16505551234",
      flow_token: "signup-flow-1",
      flow_id: FLOW_ID,
      source_message_id: form.id,
      template_id: formTemplateId,
      response: { name: "John" },
      files: [{ field: "photo_picker", index: 0, file_name: "IMG_5237.jpg", mime_type: "image/jpeg", size_bytes: photo.length, sha256: sha256(photo), error: null }],
      received_at: "2025-11-23T01:40:00.000Z",
    });
    const info = graph.requests.find((r) => r.method === "GET" && r.path === "/v23.0/3631120727156756");
    const download = graph.requests.find((r) => r.method === "GET" && r.path.startsWith("/media-download/3631120727156756"));
    expect(info?.authorization).toBe("Bearer EAAG-test-access-token");
    expect(download?.authorization).toBe("Bearer EAAG-test-access-token");
    const file = await fetch(`${t.publicUrl}/v1/flow_responses/${data.id}/files/0`, { headers: { authorization: `Bearer ${key.secret}` } });
    expect(Buffer.from(await file.arrayBuffer()).equals(photo)).toBe(true);
  });

  it("decrypts encrypted media as Meta describes, and records a tampered one as unreadable", async () => {
    const form = await sendForm("16505551235", "signup-flow-2");
    const contract = randomBytes(700_001);
    const good = encryptForCdn(contract);
    const bad = encryptForCdn(Buffer.from("forged document"));
    bad.cdnFile[3] = (bad.cdnFile[3] as number) ^ 0xff;
    bad.metadata.encrypted_hash = sha256(bad.cdnFile, "base64"); // the hash matches, the HMAC does not
    graph.cdn.set("enc-good", good.cdnFile);
    graph.cdn.set("enc-bad", bad.cdnFile);
    const response = {
      flow_token: "signup-flow-2",
      document_picker: [
        { media_id: "790aba14-5f4a-4dbd-aa9e-0d75401da14b", cdn_url: `${graph.url}/cdn/enc-good`, file_name: "contract.pdf", encryption_metadata: good.metadata },
        { media_id: "890aba14-5f4a-4dbd-aa9e-0d75401da14c", cdn_url: `${graph.url}/cdn/enc-bad`, file_name: "forged.pdf", encryption_metadata: bad.metadata },
      ],
    };
    await callback(nfmReply("16505551235", "wamid.FLOW2", response, form.wamid));
    const data = await completedFor("wamid.FLOW2");
    expect(data.files[0]).toMatchObject({ file_name: "contract.pdf", mime_type: "application/pdf", size_bytes: contract.length, sha256: sha256(contract), error: null });
    expect(data.files[1]).toMatchObject({ file_name: "forged.pdf", size_bytes: null });
    expect(data.files[1].error).toBe("unreadable: Encrypted medium failed its integrity check: HMAC-SHA256 does not match");
    expect(graph.requests.find((r) => r.path === "/cdn/enc-good")?.authorization).toBeUndefined(); // the token never goes to the CDN
    const file = await fetch(`${t.publicUrl}/v1/flow_responses/${data.id}/files/0`, { headers: { authorization: `Bearer ${key.secret}` } });
    expect(Buffer.from(await file.arrayBuffer()).equals(contract)).toBe(true);
  });

  it("retries a Graph API outage, records unknown media and hash mismatches as unreadable", async () => {
    const form = await sendForm("16505551236", "signup-flow-3");
    const scan = randomBytes(2048);
    graph.media.set("111", { bytes: scan, mimeType: "image/png", failFirst: 2 });
    graph.media.set("222", { bytes: randomBytes(100), mimeType: "image/png", sha256: sha256(Buffer.from("something else"), "base64") });
    const response = {
      flow_token: "signup-flow-3",
      scans: [
        { file_name: "scan.png", mime_type: "image/png", id: "111" },
        { file_name: "gone.png", mime_type: "image/png", id: "999" },
        { file_name: "changed.png", mime_type: "image/png", id: "222" },
      ],
    };
    await callback(nfmReply("16505551236", "wamid.FLOW3", response, form.wamid));
    const data = await completedFor("wamid.FLOW3");
    expect(data.files[0]).toMatchObject({ file_name: "scan.png", size_bytes: scan.length, error: null });
    expect(data.files[1].error).toBe("unreadable: Graph API media endpoint answered HTTP 404: (#100) Invalid parameter");
    expect(data.files[2].error).toMatch(/^unreadable: the SHA-256 of the downloaded file does not match/);
    expect(graph.requests.filter((r) => r.path === "/v23.0/111")).toHaveLength(3);
  });
});

describe("a submission that cannot be traced", () => {
  it("still fires flow.completed, without source_message_id, template_id and flow_id", async () => {
    const response = { flow_token: "made-elsewhere", rating: "5" };
    const res = await callback(nfmReply("16505559999", "wamid.FLOW4", response));
    expect(res.status).toBe(200);
    const data = await completedFor("wamid.FLOW4");
    expect(data).toMatchObject({ from: "16505559999", flow_token: "made-elsewhere", source_message_id: null, template_id: null, flow_id: null, response: { rating: "5" }, files: [] });
    const listed = await rest(t.publicUrl, "GET", "/v1/flow_responses?flow_token=made-elsewhere", { key: key.secret });
    expect(listed.json.data.map((r: { id: string }) => r.id)).toEqual([data.id]);
  });

  it('keeps a form field named "__proto__" as a field, never as a prototype (webhook and REST)', async () => {
    const raw = '{"flow_token":"proto-field","__proto__":{"polluted":"yes"},"name":"Ada"}';
    const res = await callback(nfmReply("16505559997", "wamid.FLOW6", JSON.parse(raw)));
    expect(res.status).toBe(200);
    const data = await completedFor("wamid.FLOW6");
    expect(Object.getPrototypeOf(data.response)).toBe(Object.prototype);
    expect(Object.hasOwn(data.response, "__proto__")).toBe(true);
    expect(data.response.__proto__).toEqual({ polluted: "yes" });
    expect(data.response.polluted).toBeUndefined();
    const fetched = await rest(t.publicUrl, "GET", `/v1/flow_responses/${data.id}`, { key: key.secret });
    expect(fetched.text).toContain('"response":{"__proto__":{"polluted":"yes"},"name":"Ada"}');
  });

  it("a repeated callback records the submission once", async () => {
    const payload = nfmReply("16505559998", "wamid.FLOW5", { flow_token: "again" });
    await callback(payload);
    await completedFor("wamid.FLOW5");
    expect((await callback(payload)).status).toBe(200);
    const submission = await t.service.db.collection("messages").findOne({ wa_message_id: "wamid.FLOW5" });
    expect(await t.service.db.collection("flow_responses").countDocuments({ message_id: submission!._id })).toBe(1);
  });
});
