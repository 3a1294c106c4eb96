import { hash, randomUUID } from "node:crypto";
import { v5 as uuidv5, v7 as uuidv7 } from "uuid";

/** Readable prefixes of resource ids (README "Design" §3). */
export type IdPrefix = "msg" | "frs" | "tpl" | "whk" | "snd";

/**
 * Makes a resource id: `<prefix>_<uuid>` (for example `msg_019ab3c2…`), or a
 * plain UUID without a prefix for accounts, keys and events. The UUID is a
 * version 7 (RFC 9562 §5.7: 48 bits of Unix time in ms, then 74 random bits),
 * so ids sort by creation time and new records go to the right edge of the
 * `_id` index, as ObjectIds do: on MongoDB's B-trees (and the embedded H2
 * store) an insert touches the newest pages only, not a random page each.
 *
 * @param at the record's creation time, when it has one (an event's
 *   `created_at`): the id then carries that millisecond, not the clock's a
 *   moment later. Without it, the system clock's.
 */
export function newId(prefix?: IdPrefix, at?: Date): string {
  const uuid = at ? uuidv7({ msecs: at.getTime() }) : uuidv7();
  return prefix ? `${prefix}_${uuid}` : uuid;
}

/**
 * A request id: `req_` and 24 hex characters, the first 12 the time in ms
 * (as in a version 7 UUID) and the other 12 random (48 bits, from the pooled
 * randomness randomUUID draws on); sent back as Request-Id. Time-ordered
 * like newId, so the request log's rows (keyed by it) are appended to its
 * `_id` index rather than each written to a random page of it.
 */
export function newRequestId(): string {
  const uuid = randomUUID();
  return `req_${time48Of(new Date())}${uuid.slice(24, 36)}`;
}

/** The namespace of this service's name-based UUIDs (a fixed random UUID; never change it: stored ids derive from it). */
const NAME_NAMESPACE = "5f6d0f4a-8e0c-4d7b-9a3e-2c1b0d9e8f7a";

/**
 * A UUID derived from `name` (RFC 9562 version 5: SHA-1 of a namespace and
 * the name), so that the same name always gives the same id. Used where a
 * retried step must produce the same record, for example an event published
 * again after a crash.
 */
export function uuidFromName(name: string): string {
  return uuidv5(name, NAME_NAMESPACE);
}

/**
 * A UUID derived from a time and a name (RFC 9562 version 8): its first 48
 * bits are `time48`, 12 hex digits of Unix time in ms (as a version 7 UUID
 * has them: the first 12 hex digits of a newId), and the rest comes from a
 * SHA-256 of `name`. The same time and name always give the same id, and
 * such ids sort by their time: records that must come out the same when a
 * step is retried (an event of a message's status, a webhook delivery) still
 * go to the right edge of the `_id` index, where a version 5 id (uuidFromName)
 * lands on a random page of it.
 */
export function uuidFromTimeAndName(time48: string, name: string): string {
  const hex = hash("sha256", name, "hex");
  const variant = ((parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${time48.slice(0, 8)}-${time48.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The 12 hex digits of `at`'s Unix time in ms, the time part of uuidFromTimeAndName. */
export function time48Of(at: Date): string {
  return Math.max(0, at.getTime()).toString(16).padStart(12, "0").slice(-12);
}
