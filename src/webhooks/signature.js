// Webhook signatures (spec §Webhook signature). Plain JavaScript with types in
// signature.d.ts, so that receivers can use it from any Node project:
//   import { verifyWebhookSignature } from "messaging-service/webhooks/signature";
import { createHmac, timingSafeEqual } from "node:crypto";

/** Largest accepted difference between `t` and the receiver's clock, in seconds (spec §Limits). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Raised by verifyWebhookSignature; `reason` says which rule failed. */
export class WebhookSignatureError extends Error {
  constructor(reason, message) {
    super(message);
    this.name = "WebhookSignatureError";
    this.reason = reason;
  }
}

function toBuffer(body) {
  return typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** Lowercase hex HMAC-SHA256, keyed with `secret`, of `<t>.<raw body>` (spec §Webhook signature 3). */
export function computeSignature(secret, timestamp, rawBody) {
  return createHmac("sha256", secret).update(`${timestamp}.`).update(toBuffer(rawBody)).digest("hex");
}

/** The Service-Signature header for a delivery: `t=<unix seconds>,v1=<hex>` (spec §Webhook signature 2). */
export function signWebhookPayload(secret, rawBody, timestamp) {
  return `t=${timestamp},v1=${computeSignature(secret, timestamp, rawBody)}`;
}

/**
 * The webhook-signature header of a delivery per the Standard Webhooks
 * specification (https://www.standardwebhooks.com): `v1,` and the base64
 * HMAC-SHA256 of `<id>.<timestamp>.<raw body>`, keyed with the secret's bytes
 * (the base64 after "whsec_"; base64url secrets made before padded base64
 * decode the same way). Sent beside Service-Signature, never instead.
 */
export function signStandardWebhook(secret, id, timestamp, rawBody) {
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.`).update(toBuffer(rawBody)).digest("base64")}`;
}

/**
 * Verifies a delivery as spec §Webhook signature 2-5 asks: the header holds
 * `t` and at least one `v1`; `t` is a finite number within `toleranceSeconds`
 * (300) of `now` in either direction; some `v1` equals the expected lowercase
 * hex HMAC, compared in constant time after an equal-length check. Several
 * `v1` values are allowed (any may match). Returns true, or throws a
 * WebhookSignatureError whose `reason` is one of: missing_header,
 * malformed_header, missing_timestamp, timestamp_not_finite,
 * timestamp_out_of_tolerance, missing_signature, signature_mismatch.
 */
export function verifyWebhookSignature(rawBody, header, secret, options = {}) {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (typeof header !== "string" || header.trim() === "") {
    throw new WebhookSignatureError("missing_header", "No Service-Signature header");
  }
  let timestamp;
  const signatures = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) throw new WebhookSignatureError("malformed_header", `Malformed Service-Signature element ${JSON.stringify(part)}`);
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") timestamp = value;
    else if (key === "v1") signatures.push(value);
  }
  if (timestamp === undefined) throw new WebhookSignatureError("missing_timestamp", "Service-Signature has no t");
  const t = /^-?\d+(\.\d+)?$/.test(timestamp) ? Number(timestamp) : Number.NaN;
  if (!Number.isFinite(t)) {
    throw new WebhookSignatureError("timestamp_not_finite", `Service-Signature t is not a finite number: ${JSON.stringify(timestamp)}`);
  }
  if (Math.abs(nowSeconds - t) > tolerance) {
    throw new WebhookSignatureError("timestamp_out_of_tolerance", `Service-Signature t is more than ${tolerance} s from now`);
  }
  if (signatures.length === 0) throw new WebhookSignatureError("missing_signature", "Service-Signature has no v1");
  const expected = Buffer.from(computeSignature(secret, timestamp, rawBody), "utf8");
  const matched = signatures.some((candidate) => {
    const given = Buffer.from(candidate, "utf8");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matched) throw new WebhookSignatureError("signature_mismatch", "No v1 signature matches the payload and secret");
  return true;
}
