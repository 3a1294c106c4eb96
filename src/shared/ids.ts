import { randomUUID } from "node:crypto";
import { v5 as uuidv5, v7 as uuidv7 } from "uuid";

/** Readable prefixes of resource ids (DESIGN.md §3). */
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
 * A request id: `req_` and 24 hex characters (96 random bits, from the
 * pooled randomness randomUUID draws on); sent back as Request-Id.
 */
export function newRequestId(): string {
  const uuid = randomUUID();
  return `req_${uuid.slice(0, 8)}${uuid.slice(9, 13)}${uuid.slice(15, 18)}${uuid.slice(20, 23)}${uuid.slice(24, 30)}`;
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
