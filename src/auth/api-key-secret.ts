import { hash, randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";

/** Every API key secret starts with this prefix. */
export const SECRET_PREFIX = "sk_";

/** Letters and digits: a key is one "word" to editors and shells, and to secret scanners' patterns. */
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Random characters of a secret: 40 base62 characters, about 238 bits. */
const RANDOM_LENGTH = 40;
/** Checksum characters: CRC-32 of the random part in base62, left-padded with "0" to 6. */
const CHECKSUM_LENGTH = 6;
/** Secrets made today: sk_ + 40 random + 6 checksum characters, all base62 (the shape GitHub's tokens have). */
const SECRET_PATTERN = new RegExp(`^${SECRET_PREFIX}([0-9A-Za-z]{${RANDOM_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`);
/** Secrets made before the checksum (sk_ + 43 base64url characters); still accepted. */
const LEGACY_PATTERN = /^sk_[A-Za-z0-9_-]{43}$/;

/** Describes the secret shape in errors. */
export const SECRET_SHAPE = "'sk_' followed by 46 letters and digits";

/** The 6-character base62 checksum of a secret's random part. */
function checksumOf(random: string): string {
  let n = crc32(random);
  let out = "";
  do {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  } while (n > 0);
  return out.padStart(CHECKSUM_LENGTH, "0");
}

/** `length` unbiased base62 characters from the system's CSPRNG (bytes ≥ 248 are drawn again). */
function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/**
 * Makes a new API key secret: "sk_", 40 random base62 characters and a
 * 6-character CRC-32 checksum of them. The fixed prefix and the checksum let
 * secret scanners match keys with few false positives, and let the service
 * refuse a mistyped or truncated key without a database look-up. Shown once
 * at creation or roll (spec §Authentication 2).
 */
export function generateSecret(): string {
  const random = randomBase62(RANDOM_LENGTH);
  return SECRET_PREFIX + random + checksumOf(random);
}

/**
 * Why `secret` cannot be a key, or undefined when it has a key's shape: today's
 * form with a matching checksum, or the older form without one.
 */
export function secretShapeProblem(secret: string): string | undefined {
  if (LEGACY_PATTERN.test(secret)) return undefined;
  const match = SECRET_PATTERN.exec(secret);
  if (!match) return `keys are ${SECRET_SHAPE}`;
  if (checksumOf(match[1] as string) !== match[2]) return "its checksum does not match: the key was mistyped or cut";
  return undefined;
}

/** True when `secret` has the shape generateSecret produces (or the older one). */
export function isWellFormedSecret(secret: string): boolean {
  return secretShapeProblem(secret) === undefined;
}

/** The stored form of a secret: lowercase hex SHA-256 (README "Design" §7). */
export function hashSecret(secret: string): string {
  return hash("sha256", secret, "hex");
}

/** What the console shows to recognise a key: "sk_" and the next four characters. */
export function secretPrefixOf(secret: string): string {
  return secret.slice(0, SECRET_PREFIX.length + 4);
}
