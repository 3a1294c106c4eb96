import type { Db } from "mongodb";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Clock } from "../shared/clock.js";
import { newId, time48Of, uuidFromName, uuidFromTimeAndName } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import { groupInserts } from "../store/insert-each.js";

/**
 * A webhook event as stored in the `events` collection (spec §Webhook event
 * envelope, §Events). The envelope is serialized once, at publication:
 * every delivery attempt sends exactly `body`, so the bytes and the id are
 * the same across retries.
 */
export interface StoredEvent {
  /** Event id (UUID): the envelope's `id` and the Service-Delivery header. */
  _id: string;
  workspace_id: string;
  /** Event type, for example "message.delivered". */
  type: string;
  /** Creation time of the event (the envelope's `created_at`). */
  created_at: Date;
  /** The envelope's `data`, in REST JSON (see src/contract/rest-json.ts). */
  data: JsonObject;
  /** The envelope as sent: `{"id","type","created_at","data"}`, JSON text (a test event's adds `"test": true`). */
  body: string;
  /** True for a test event sent to one endpoint from the console (never published on the bus). */
  test?: boolean;
}

/** What a capability gives to publish an event. */
export interface NewEvent {
  workspaceId: string;
  /** One of the spec's event types (see EVENT_TYPES). */
  type: EventType;
  /** The event's data in REST JSON, for example toRestJson(MessageEventDataSchema, data). */
  data: JsonObject;
  /**
   * Names the occurrence (for example "report:<network id>:delivered"), so that
   * publishing it again (a step retried after a crash) yields the same event
   * id and no second event. Unset: every call is a new event.
   */
  dedupeKey?: string;
  /**
   * With `dedupeKey`: the time the occurrence belongs to, the same on every
   * retry (for a message's status, the message's creation time). The event
   * id then starts with its milliseconds (uuidFromTimeAndName), so that
   * events go to the right edge of the `_id` index; without it the id is a
   * version 5 UUID of the key alone, a random place in that index.
   */
  dedupeAt?: Date;
}

/**
 * The event types: the spec's table (§Events), and the changes of a
 * workspace's opt-out list (README "Webhooks"; the spec lets new types be
 * added: receivers ignore those they do not know).
 */
export const EVENT_TYPES = [
  "message.sent",
  "message.delivered",
  "message.read",
  "message.failed",
  "message.canceled",
  "message.received",
  "flow.completed",
  "contact.opted_out",
  "contact.opted_in",
] as const;

/** One event type. */
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The outbox of an event: called before the event is stored, it stores the
 * durable work the event needs (for example its webhook deliveries, each
 * due at once), and returns what to do once the event is stored (for
 * example attempt them at once in this process), or null when there is
 * nothing. Stored first, the work survives a crash right after the event
 * is stored; work whose event never got stored finds no event and is
 * dropped (see the webhook engine).
 */
export type EventOutbox = (event: StoredEvent) => Promise<(() => void) | null>;

/** Publication of webhook events: the work they need stored first (outboxes), then the event, then that work started. */
export interface EventBus {
  /**
   * Runs the outboxes, then stores the event (the durable record: nothing
   * accepted is lost), then runs what the outboxes returned. With a
   * `dedupeKey` already published, answers the stored event (its work was
   * stored with it the first time).
   *
   * @throws the database's error when the work or the event could not be stored (the caller may publish again).
   */
  publish(event: NewEvent): Promise<StoredEvent>;
  /** Adds an outbox, run for every event published by this process. */
  onPublish(outbox: EventOutbox): void;
  /** An event by id (and, when given, of `workspaceId`), or null. */
  get(id: string, workspaceId?: string): Promise<StoredEvent | null>;
  /** The stored envelopes of events `ids`, by event id (the bytes webhook attempts send and sign). */
  bodies(ids: readonly string[]): Promise<Map<string, string>>;
  /** Events about message `messageId`: its status events and the replies to it (at most `limit` each), oldest first (stored together: by `data.occurred_at`). */
  aboutMessage(messageId: string, limit: number): Promise<StoredEvent[]>;
  /**
   * The workspace's events created in [since, until) of `types`, test events
   * left out, oldest first, at most `limit` (id, workspace, type and time
   * only: webhook recovery).
   */
  findCreated(workspaceId: string, since: Date, until: Date, types: readonly string[], limit: number): Promise<Pick<StoredEvent, "_id" | "workspace_id" | "type" | "created_at">[]>;
  /** Stores a test event as it is (no outbox runs: its one delivery is stored by the caller). */
  insertTest(event: StoredEvent & { test: true }): Promise<void>;
  ensureIndexes(): Promise<void>;
}

/**
 * Creates the event bus over `db`. Events published at about the same time
 * are stored together (group commit: one insertMany, unordered, for whatever
 * accumulated during the previous write), each publisher awaiting its own.
 */
export function createEventBus(db: Db, clock: Clock, logger: Logger): EventBus {
  const collection = db.collection<StoredEvent>("events");
  const outboxes: EventOutbox[] = [];
  const inserts = groupInserts(collection);
  return {
    async publish({ workspaceId, type, data, dedupeKey, dedupeAt }) {
      const createdAt = clock.now();
      const name = `${workspaceId}:${dedupeKey}`;
      const id = !dedupeKey ? newId(undefined, createdAt) : dedupeAt ? uuidFromTimeAndName(time48Of(dedupeAt), name) : uuidFromName(name);
      const body = JSON.stringify({ id, type, created_at: createdAt.toISOString(), data });
      const event: StoredEvent = { _id: id, workspace_id: workspaceId, type, created_at: createdAt, data, body };
      const afterwards = [];
      for (const outbox of outboxes) afterwards.push(await outbox(event));
      const outcome = await inserts.add(event);
      if (outcome instanceof Error) throw outcome;
      if (outcome === "duplicate") {
        if (!dedupeKey) throw new Error(`event id ${id} exists already`);
        return (await collection.findOne({ _id: id })) ?? event;
      }
      for (const run of afterwards) {
        try {
          run?.();
        } catch (err) {
          logger.error({ err, eventId: id, type }, "starting an event's work failed; its stored work runs when due");
        }
      }
      return event;
    },
    onPublish(outbox) {
      outboxes.push(outbox);
    },
    get: (id, workspaceId) => collection.findOne({ _id: id, ...(workspaceId ? { workspace_id: workspaceId } : {}) }),
    async bodies(ids) {
      const found = await collection.find({ _id: { $in: [...ids] } }, { projection: { body: 1 }, batchSize: ids.length }).toArray();
      return new Map(found.map((e) => [e._id, e.body]));
    },
    async aboutMessage(messageId, limit) {
      // One query per index (each filter is exactly an index's keys, which every server plans by that index).
      const [own, replies] = await Promise.all(
        ["data.message_id", "data.reply_to_message_id"].map((field) => collection.find({ [field]: messageId }).limit(limit).toArray()),
      );
      // Events stored together (reports applied in one write) share created_at: then the time each says it happened, then the id.
      const occurredAt = (e: StoredEvent) => (typeof e.data.occurred_at === "string" ? Date.parse(e.data.occurred_at) || 0 : 0);
      return [...own!, ...replies!].sort(
        (a, b) => a.created_at.getTime() - b.created_at.getTime() || occurredAt(a) - occurredAt(b) || a._id.localeCompare(b._id),
      );
    },
    findCreated: (workspaceId, since, until, types, limit) =>
      collection
        .find(
          { workspace_id: workspaceId, created_at: { $gte: since, $lt: until }, type: { $in: [...types] }, test: { $ne: true } },
          { projection: { _id: 1, workspace_id: 1, type: 1, created_at: 1 }, sort: { created_at: 1, _id: 1 }, limit },
        )
        .toArray(),
    async insertTest(event) {
      await collection.insertOne(event);
    },
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, created_at: -1 });
      // The console's message log: the events a message caused.
      await collection.createIndex({ "data.message_id": 1 });
      await collection.createIndex({ "data.reply_to_message_id": 1 });
    },
  };
}
