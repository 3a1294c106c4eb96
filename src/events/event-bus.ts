import type { Collection, Db } from "mongodb";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Clock } from "../shared/clock.js";
import { newId, uuidFromName } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import { GroupCommit } from "../store/group-commit.js";

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
  /** The envelope's `data`, in REST JSON (see src/gateway/rest-json.ts). */
  data: JsonObject;
  /** The envelope as sent: `{"id","type","created_at","data"}`, JSON text. */
  body: string;
  /**
   * When the event was turned into deliveries (null until then). A sweep
   * finds events still null after a crash and fans them out (outbox). Set
   * at creation when no listener had work for it (no endpoint selected it).
   */
  fanned_out_at: Date | null;
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
}

interface WriteErrorLike {
  index: number;
  code: number;
  errmsg?: string;
}

/** The event types of the spec's table (§Events). */
export const EVENT_TYPES = [
  "message.sent",
  "message.delivered",
  "message.read",
  "message.failed",
  "message.received",
  "flow.completed",
] as const;

/** One event type. */
export type EventType = (typeof EVENT_TYPES)[number];

/** Called after an event is stored, in the publishing process (for example to fan it out to webhooks at once). */
export type EventListener = (event: StoredEvent) => Promise<void>;

/**
 * Asked before an event is stored whether its listener has work for it
 * (for example: an enabled endpoint of the workspace selected the type);
 * `at` is the event's creation time. An event no listener wants is stored
 * already marked fanned out, and no listener is called: one write instead of two.
 */
export type EventInterest = (workspaceId: string, type: EventType, at: Date) => Promise<boolean>;

/** Publication of webhook events: stored first, then handed to the listeners. */
export interface EventBus {
  readonly collection: Collection<StoredEvent>;
  /**
   * Stores the event (the durable record: nothing accepted is lost), then
   * calls every listener. A listener's failure is logged, not thrown: the
   * event is stored and the fan-out sweep retries it. With a `dedupeKey`
   * already published, answers the stored event and calls no listener (the
   * sweep fans out what an earlier attempt left undone).
   */
  publish(event: NewEvent): Promise<StoredEvent>;
  /**
   * Adds a listener for events published by this process; with `interest`,
   * only for the events it says it wants (an interest that fails counts as
   * wanting it).
   */
  onPublished(listener: EventListener, interest?: EventInterest): void;
  ensureIndexes(): Promise<void>;
}

/** What became of one event in a batched insert. */
type InsertOutcome = "inserted" | "duplicate" | Error;

/**
 * Creates the event bus over `db`. Events published at about the same time
 * are stored together (group commit: one insertMany, unordered, for whatever
 * accumulated during the previous write), each publisher awaiting its own.
 */
export function createEventBus(db: Db, clock: Clock, logger: Logger): EventBus {
  const collection = db.collection<StoredEvent>("events");
  const listeners: { listener: EventListener; interest?: EventInterest }[] = [];
  const inserts = new GroupCommit<StoredEvent, InsertOutcome>(async (events) => {
    try {
      await collection.insertMany(events, { ordered: false });
      return events.map(() => "inserted");
    } catch (err) {
      const reported = (err as { writeErrors?: WriteErrorLike | WriteErrorLike[] }).writeErrors;
      if (reported === undefined) throw err;
      const failed = new Map(([] as WriteErrorLike[]).concat(reported).map((e) => [e.index, e]));
      return events.map((_, i) => {
        const e = failed.get(i);
        return !e ? "inserted" : e.code === 11000 ? "duplicate" : new Error(e.errmsg ?? `insert failed (code ${e.code})`);
      });
    }
  }, 500);
  return {
    collection,
    async publish({ workspaceId, type, data, dedupeKey }) {
      const id = dedupeKey ? uuidFromName(`${workspaceId}:${dedupeKey}`) : newId();
      const createdAt = clock.now();
      const interested = [];
      for (const entry of listeners) {
        const wanted = entry.interest ? await entry.interest(workspaceId, type, createdAt).catch(() => true) : true;
        if (wanted) interested.push(entry.listener);
      }
      const body = JSON.stringify({ id, type, created_at: createdAt.toISOString(), data });
      const event: StoredEvent = {
        _id: id,
        workspace_id: workspaceId,
        type,
        created_at: createdAt,
        data,
        body,
        fanned_out_at: interested.length === 0 ? createdAt : null,
      };
      const outcome = await inserts.add(event);
      if (outcome instanceof Error) throw outcome;
      if (outcome === "duplicate") {
        if (!dedupeKey) throw new Error(`event id ${id} exists already`);
        return (await collection.findOne({ _id: id })) ?? event;
      }
      for (const listener of interested) {
        await listener(event).catch((err: unknown) =>
          logger.error({ err, eventId: id, type }, "event listener failed; the fan-out sweep will retry"),
        );
      }
      return event;
    },
    onPublished(listener, interest) {
      listeners.push({ listener, interest });
    },
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, created_at: -1 });
      await collection.createIndex({ fanned_out_at: 1, created_at: 1 });
      // The console's message log: the events a message caused.
      await collection.createIndex({ "data.message_id": 1 });
      await collection.createIndex({ "data.reply_to_message_id": 1 });
    },
  };
}
