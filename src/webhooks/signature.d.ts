/** Largest accepted difference between `t` and the receiver's clock, in seconds (spec §Limits). */
export declare const DEFAULT_TOLERANCE_SECONDS: 300;

/** Why a delivery's signature was refused. */
export type WebhookSignatureFailure =
  | "missing_header"
  | "malformed_header"
  | "missing_timestamp"
  | "timestamp_not_finite"
  | "timestamp_out_of_tolerance"
  | "missing_signature"
  | "signature_mismatch";

/** Raised by verifyWebhookSignature; `reason` says which rule failed. */
export declare class WebhookSignatureError extends Error {
  readonly reason: WebhookSignatureFailure;
  constructor(reason: WebhookSignatureFailure, message: string);
}

/** Lowercase hex HMAC-SHA256, keyed with `secret`, of `<t>.<raw body>` (spec §Webhook signature 3). */
export declare function computeSignature(secret: string, timestamp: number | string, rawBody: string | Uint8Array): string;

/** The Service-Signature header for a delivery: `t=<unix seconds>,v1=<hex>` (spec §Webhook signature 2). */
export declare function signWebhookPayload(secret: string, rawBody: string | Uint8Array, timestamp: number): string;

/**
 * The webhook-signature header per Standard Webhooks: `v1,<base64 HMAC-SHA256>`
 * of `<id>.<timestamp>.<raw body>`, keyed with the base64-decoded secret after
 * "whsec_". `timestamp` in unix seconds, as in webhook-timestamp.
 */
export declare function signStandardWebhook(secret: string, id: string, timestamp: number, rawBody: string | Uint8Array): string;

/**
 * Verifies a delivery (spec §Webhook signature 2-5): `t` finite and within
 * `toleranceSeconds` (default 300) of `now`, some `v1` equal to the expected
 * lowercase hex HMAC-SHA256 of `<t>.<raw body>` (constant-time comparison after
 * an equal-length check). Returns true or throws WebhookSignatureError.
 *
 * @param rawBody the exact request bytes, before any JSON parsing
 * @param header the Service-Signature header value
 * @param secret the endpoint's signing secret (`whsec_…`)
 */
export declare function verifyWebhookSignature(
  rawBody: string | Uint8Array,
  header: string | undefined | null,
  secret: string,
  options?: { toleranceSeconds?: number; now?: Date },
): true;
