import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/** Every signing secret starts with this prefix (spec §Webhook endpoint, secret_hint). */
export const SIGNING_SECRET_PREFIX = "whsec_";

/**
 * Makes a new signing secret: "whsec_" and the standard, padded base64 of
 * 32 random bytes (44 characters), the form the Standard Webhooks libraries
 * accept. Service-Signature's HMAC is keyed with the whole string (spec
 * §Webhook signature 3); webhook-signature's with the decoded bytes. Shown
 * once, at creation. (Secrets made before were unpadded base64url, which
 * those libraries refuse.)
 */
export function generateSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(32).toString("base64");
}

/**
 * The masked form of a secret (spec §Webhook endpoint, secret_hint): the
 * "whsec_" prefix, the first four characters after it, an ellipsis, the last
 * four characters. For example "whsec_3fQa…x9Tk".
 */
export function secretHint(secret: string): string {
  const rest = secret.slice(SIGNING_SECRET_PREFIX.length);
  return `${SIGNING_SECRET_PREFIX}${rest.slice(0, 4)}…${rest.slice(-4)}`;
}

/** A signing secret as stored: AES-256-GCM ciphertext, never the secret (README "Design" §7). */
export interface EncryptedSecret {
  /** Format version: 1 = AES-256-GCM, 12-byte IV, 16-byte tag, base64 fields. */
  v: 1;
  /** First 8 hex digits of SHA-256 of the key, to tell a wrong key from damage. */
  kid: string;
  iv: string;
  ciphertext: string;
  tag: string;
}

/** Raised when a stored secret cannot be decrypted (another key, or damaged data). */
export class SecretKeyError extends Error {
  override name = "SecretKeyError";
}

/** Identifier of a key as stored next to what it encrypted. */
export function keyId(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 8);
}

/**
 * Encrypts `secret` with the 32-byte `key` (AES-256-GCM, random 96-bit IV).
 * `boundTo` (the endpoint id) is authenticated with it, so a stored secret
 * copied onto another endpoint does not decrypt.
 */
export function encryptSecret(key: Buffer, secret: string, boundTo: string): EncryptedSecret {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(boundTo, "utf8"));
  const ciphertext = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return { v: 1, kid: keyId(key), iv: iv.toString("base64"), ciphertext: ciphertext.toString("base64"), tag: cipher.getAuthTag().toString("base64") };
}

/**
 * Decrypts what encryptSecret made.
 *
 * @throws SecretKeyError when the key is not the one that encrypted it, or the data was altered.
 */
export function decryptSecret(key: Buffer, stored: EncryptedSecret, boundTo: string): string {
  if (stored.kid !== keyId(key)) {
    throw new SecretKeyError(`The signing secret was encrypted with another key (key id ${stored.kid}; WEBHOOK_SECRET_KEY has ${keyId(key)})`);
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(stored.iv, "base64"));
    decipher.setAAD(Buffer.from(boundTo, "utf8"));
    decipher.setAuthTag(Buffer.from(stored.tag, "base64"));
    return Buffer.concat([decipher.update(Buffer.from(stored.ciphertext, "base64")), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretKeyError("The stored signing secret does not decrypt: it was altered or belongs to another endpoint");
  }
}
