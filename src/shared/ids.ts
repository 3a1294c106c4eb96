import { randomBytes, randomUUID } from "node:crypto";

/** Readable prefixes of resource ids (DESIGN.md §3). */
export type IdPrefix = "msg" | "frs" | "tpl" | "whk" | "snd";

/**
 * Makes a resource id: `<prefix>_<uuid>` (for example `msg_3f0c…`), or a
 * plain UUID without a prefix for accounts, keys and events.
 */
export function newId(prefix?: IdPrefix): string {
  return prefix ? `${prefix}_${randomUUID()}` : randomUUID();
}

/** A request id: `req_` and 24 hex characters; sent back as Request-Id. */
export function newRequestId(): string {
  return `req_${randomBytes(12).toString("hex")}`;
}
