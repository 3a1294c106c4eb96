import { randomUUID } from "node:crypto";

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
