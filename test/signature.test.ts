import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { signWebhookPayload, verifyWebhookSignature, WebhookSignatureError } from "../src/webhooks/signature.js";

const secret = "whsec_test_secret_0123456789";
const body = '{"id":"5b0c…","type":"message.delivered","created_at":"2026-01-31T12:00:00.000Z","data":{}}';
const now = new Date("2026-01-31T12:00:00.000Z");
const t = Math.floor(now.getTime() / 1000);

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof WebhookSignatureError ? err.reason : `unexpected ${String(err)}`;
  }
}

describe("webhook signatures (spec §Webhook signature)", () => {
  it("signs t and the raw body as an independent HMAC computes it", () => {
    const header = signWebhookPayload(secret, body, t);
    const independent = createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");
    expect(header).toBe(`t=${t},v1=${independent}`);
    expect(verifyWebhookSignature(body, header, secret, { now })).toBe(true);
    expect(verifyWebhookSignature(Buffer.from(body), header, secret, { now })).toBe(true);
  });

  it("accepts any matching v1 among several, and a timestamp up to 300 s either way", () => {
    const good = signWebhookPayload(secret, body, t).split(",")[1];
    expect(verifyWebhookSignature(body, `t=${t},v1=${"0".repeat(64)},${good}`, secret, { now })).toBe(true);
    expect(verifyWebhookSignature(body, signWebhookPayload(secret, body, t - 300), secret, { now })).toBe(true);
    expect(verifyWebhookSignature(body, signWebhookPayload(secret, body, t + 300), secret, { now })).toBe(true);
  });

  it.each([
    ["no header", () => verifyWebhookSignature(body, undefined, secret, { now }), "missing_header"],
    ["wrong secret", () => verifyWebhookSignature(body, signWebhookPayload("whsec_other", body, t), secret, { now }), "signature_mismatch"],
    ["tampered body", () => verifyWebhookSignature(`${body} `, signWebhookPayload(secret, body, t), secret, { now }), "signature_mismatch"],
    ["stale", () => verifyWebhookSignature(body, signWebhookPayload(secret, body, t - 301), secret, { now }), "timestamp_out_of_tolerance"],
    ["future", () => verifyWebhookSignature(body, signWebhookPayload(secret, body, t + 301), secret, { now }), "timestamp_out_of_tolerance"],
    ["non-numeric t", () => verifyWebhookSignature(body, `t=abc,v1=${"a".repeat(64)}`, secret, { now }), "timestamp_not_finite"],
    ["infinite t", () => verifyWebhookSignature(body, `t=Infinity,v1=${"a".repeat(64)}`, secret, { now }), "timestamp_not_finite"],
    ["missing v1", () => verifyWebhookSignature(body, `t=${t}`, secret, { now }), "missing_signature"],
    ["uppercase hex", () => verifyWebhookSignature(body, signWebhookPayload(secret, body, t).toUpperCase().replace("T=", "t=").replace("V1=", "v1="), secret, { now }), "signature_mismatch"],
    ["garbage", () => verifyWebhookSignature(body, "nonsense", secret, { now }), "malformed_header"],
  ])("refuses %s", (_name, fn, reason) => {
    expect(reasonOf(fn)).toBe(reason);
  });
});
