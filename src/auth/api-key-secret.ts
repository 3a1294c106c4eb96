import { createHash, randomBytes } from "node:crypto";

/** Every API key secret starts with this prefix. */
export const SECRET_PREFIX = "sk_";
const SECRET_PATTERN = /^sk_[A-Za-z0-9_-]{43}$/;

/**
 * Makes a new API key secret: "sk_" and 43 base64url characters (256 random
 * bits). Shown once at creation (spec §Authentication 2).
 */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64url");
}

/** True when `secret` has the shape generateSecret produces. */
export function isWellFormedSecret(secret: string): boolean {
  return SECRET_PATTERN.test(secret);
}

/** The stored form of a secret: lowercase hex SHA-256 (DESIGN.md §7). */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** What the console shows to recognise a key: "sk_" and the next four characters. */
export function secretPrefixOf(secret: string): string {
  return secret.slice(0, SECRET_PREFIX.length + 4);
}
