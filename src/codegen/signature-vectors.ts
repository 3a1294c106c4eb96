import { writeFile } from "node:fs/promises";
import path from "node:path";
import { projectRoot } from "../shared/project-root.js";
import { computeSignature, signWebhookPayload, type WebhookSignatureFailure } from "../webhooks/signature.js";

/** The shared vectors file that the Node, Go and Python verifiers are all checked against. */
export const SIGNATURE_VECTORS_FILE = path.join(projectRoot, "test", "webhook-signature-vectors.json");

/** One case: verify `body` (UTF-8) with `header` and `secret` at `now` (unix seconds). */
export interface SignatureVector {
  name: string;
  secret: string;
  body: string;
  header: string;
  now: number;
  /** true when the verifier must accept it. */
  valid: boolean;
  /** When refused: the reason every verifier reports (null when valid). */
  reason: WebhookSignatureFailure | null;
}

/** The vectors file: tolerance and cases. */
export interface SignatureVectors {
  description: string;
  tolerance_seconds: number;
  vectors: SignatureVector[];
}

/**
 * Builds the shared webhook-signature vectors (spec §Webhook signature 2-5)
 * with the TypeScript signer: valid deliveries (also at ±300 s, with several
 * v1 values, with unknown elements and spaces), and refusals (wrong secret,
 * tampered body, t beyond 300 s either way, non-numeric t, missing t or v1,
 * uppercase or truncated hex, empty or malformed header). Deterministic.
 */
export function buildSignatureVectors(): SignatureVectors {
  const secret = "whsec_vectors_c2VjcmV0LWZvci10ZXN0LXZlY3RvcnM";
  const now = 1769860800; // 2026-01-31T12:00:00Z
  const body =
    '{"id":"5b0c6f8e-2f4a-4e59-9d1e-3f2a8c7b6d10","type":"message.delivered","created_at":"2026-01-31T12:00:00.000Z",' +
    '"data":{"message_id":"msg_0f8e2c1a-7b3d-4e5f-8a9b-1c2d3e4f5a6b","to":"4915112345678","status":"delivered",' +
    '"wa_message_id":"wamid.HBgLNDkxNTExMjM0NTY3OBUCABEYEjQ=","occurred_at":"2026-01-31T11:59:58.123Z","error":null,' +
    '"text":"Olá, 👋 ünïcödé"}}';
  const sig = (t: number | string, b = body, s = secret) => computeSignature(s, t, b);
  const good = signWebhookPayload(secret, body, now);
  const valid = (name: string, header: string, b = body): SignatureVector => ({ name, secret, body: b, header, now, valid: true, reason: null });
  const refused = (name: string, header: string, reason: WebhookSignatureFailure, b = body, s = secret): SignatureVector => ({
    name,
    secret: s,
    body: b,
    header,
    now,
    valid: false,
    reason,
  });
  return {
    description:
      "Webhook signature vectors (spec §Webhook signature 2-5), written by `npm run generate` with the TypeScript signer " +
      "(src/webhooks/signature.js). Each verifier (Node, Go, Python) must accept exactly the valid ones and refuse the others " +
      "with the given reason. body is the raw request body as UTF-8; now is the receiver's clock in unix seconds.",
    tolerance_seconds: 300,
    vectors: [
      valid("valid", good),
      valid("valid at the past edge of the tolerance (t = now - 300)", signWebhookPayload(secret, body, now - 300)),
      valid("valid at the future edge of the tolerance (t = now + 300)", signWebhookPayload(secret, body, now + 300)),
      valid("several v1 values, the second matching", `t=${now},v1=${"0".repeat(64)},v1=${sig(now)}`),
      valid("unknown elements are ignored", `t=${now},v0=deadbeef,v1=${sig(now)},x=1`),
      valid("spaces around elements are ignored", `t=${now}, v1=${sig(now)}`),
      valid("empty body", signWebhookPayload(secret, "", now), ""),
      refused("wrong secret", signWebhookPayload("whsec_another_secret_entirely_0000", body, now), "signature_mismatch"),
      refused("tampered body", good, "signature_mismatch", body.replace('"delivered"}', '"read"}').replace("4915112345678", "4915112345679")),
      refused("body with a trailing newline added", good, "signature_mismatch", `${body}\n`),
      refused("signature of another timestamp under a fresh t", `t=${now},v1=${sig(now - 3600)}`, "signature_mismatch"),
      refused("several v1 values, none matching", `t=${now},v1=${"0".repeat(64)},v1=${sig(now, body, "whsec_other")}`, "signature_mismatch"),
      refused("uppercase hex", `t=${now},v1=${sig(now).toUpperCase()}`, "signature_mismatch"),
      refused("truncated hex", `t=${now},v1=${sig(now).slice(0, 63)}`, "signature_mismatch"),
      refused("stale timestamp (t = now - 301)", signWebhookPayload(secret, body, now - 301), "timestamp_out_of_tolerance"),
      refused("future timestamp (t = now + 301)", signWebhookPayload(secret, body, now + 301), "timestamp_out_of_tolerance"),
      refused("replay of a day-old delivery", signWebhookPayload(secret, body, now - 86400), "timestamp_out_of_tolerance"),
      refused("non-numeric t", `t=abc,v1=${sig("abc")}`, "timestamp_not_finite"),
      refused("t=Infinity", `t=Infinity,v1=${sig("Infinity")}`, "timestamp_not_finite"),
      refused("t=NaN", `t=NaN,v1=${sig("NaN")}`, "timestamp_not_finite"),
      refused("t in exponent notation", `t=1.76986e9,v1=${sig("1.76986e9")}`, "timestamp_not_finite"),
      refused("empty t", `t=,v1=${sig("")}`, "timestamp_not_finite"),
      refused("missing v1", `t=${now}`, "missing_signature"),
      refused("missing t", `v1=${sig(now)}`, "missing_timestamp"),
      refused("empty header", "", "missing_header"),
      refused("malformed header", "nonsense", "malformed_header"),
    ],
  };
}

/** Writes buildSignatureVectors() to SIGNATURE_VECTORS_FILE (called by `npm run generate`). */
export async function writeSignatureVectors(): Promise<void> {
  await writeFile(SIGNATURE_VECTORS_FILE, `${JSON.stringify(buildSignatureVectors(), null, 2)}\n`);
}
