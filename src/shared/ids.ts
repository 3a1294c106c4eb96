import { createHash, randomUUID } from "node:crypto";

/** Readable prefixes of resource ids (DESIGN.md §3). */
export type IdPrefix = "msg" | "frs" | "tpl" | "whk" | "snd";

/**
 * Makes a resource id: `<prefix>_<uuid>` (for example `msg_3f0c…`), or a
 * plain UUID without a prefix for accounts, keys and events.
 */
export function newId(prefix?: IdPrefix): string {
  return prefix ? `${prefix}_${randomUUID()}` : randomUUID();
}

/**
 * A request id: `req_` and 24 hex characters (96 random bits, from the
 * pooled randomness randomUUID draws on); sent back as Request-Id.
 */
export function newRequestId(): string {
  const uuid = randomUUID();
  return `req_${uuid.slice(0, 8)}${uuid.slice(9, 13)}${uuid.slice(15, 18)}${uuid.slice(20, 23)}${uuid.slice(24, 30)}`;
}

/**
 * A UUID derived from `name` (RFC 9562 version 5: SHA-1 of a namespace and
 * the name), so that the same name always gives the same id. Used where a
 * retried step must produce the same record, for example an event published
 * again after a crash.
 */
export function uuidFromName(name: string): string {
  // Namespace of this service's names (a fixed random UUID).
  const namespace = Buffer.from("5f6d0f4a8e0c4d7b9a3e2c1b0d9e8f7a", "hex");
  const bytes = createHash("sha1").update(namespace).update(name).digest().subarray(0, 16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
