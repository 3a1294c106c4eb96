import type { ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AttemptErrorKind,
  AttemptTrigger,
  DeliveryStatus,
  type DeliveryAttemptSchema,
  type DeliverySchema,
  type DeliveryService,
} from "../../gen/messaging/console/v1/deliveries_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import type { EventBus, EventType } from "../events/event-bus.js";
import { enumValueFromJson } from "../contract/rest-json.js";
import { AttemptErrorKindSchema } from "../../gen/messaging/console/v1/deliveries_pb.js";
import { apiError, invalidArgument, notFound } from "../shared/errors.js";
import { isUuid } from "../shared/validation.js";
import type { AttemptRecord, DeliveryRecord, DeliveryStore } from "./delivery-store.js";
import type { Dispatcher } from "./dispatcher.js";
import { requireEndpoint } from "./endpoint-service.js";
import type { EndpointStore } from "./endpoint-store.js";

const ts = (date: Date | null | undefined) => (date ? timestampFromDate(date) : undefined);
const errorKind = (kind: string | null) => (kind ? (enumValueFromJson(AttemptErrorKindSchema, kind) ?? AttemptErrorKind.NETWORK) : AttemptErrorKind.UNSPECIFIED);

/** The console form of an attempt record. */
export function attemptToProto(a: AttemptRecord): MessageInitShape<typeof DeliveryAttemptSchema> {
  return {
    id: a._id,
    object: "delivery_attempt",
    deliveryId: a.delivery_id,
    endpointId: a.endpoint_id,
    eventId: a.event_id,
    number: a.number,
    trigger: a.trigger === "manual" ? AttemptTrigger.MANUAL : AttemptTrigger.AUTOMATIC,
    url: a.url,
    startedAt: ts(a.started_at),
    durationMs: a.duration_ms ?? undefined,
    httpStatus: a.http_status ?? undefined,
    responseBody: a.response_body ?? undefined,
    errorKind: errorKind(a.error_kind),
    errorMessage: a.error_message ?? undefined,
    succeeded: a.succeeded,
    disabledEndpoint: a.disabled_endpoint,
    nextAttemptAt: ts(a.next_attempt_at),
  };
}

const STATUS: Record<DeliveryRecord["status"], DeliveryStatus> = {
  pending: DeliveryStatus.PENDING,
  // Waiting while its endpoint is disabled: still pending, with no time of its next attempt.
  disabled: DeliveryStatus.PENDING,
  succeeded: DeliveryStatus.SUCCEEDED,
  failed: DeliveryStatus.FAILED,
  canceled: DeliveryStatus.CANCELED,
};

/**
 * The console form of a delivery, from its stored state: its next attempt's
 * time while pending and not in flight.
 */
export function deliveryToProto(r: DeliveryRecord): MessageInitShape<typeof DeliverySchema> {
  return {
    id: r._id,
    object: "delivery",
    workspaceId: r.workspace_id,
    endpointId: r.endpoint_id,
    eventId: r.event_id,
    eventType: r.event_type,
    status: STATUS[r.status],
    attemptCount: r.attempt_count,
    lastAttemptAt: ts(r.last_attempt_at),
    lastHttpStatus: r.last_http_status ?? undefined,
    lastErrorKind: errorKind(r.last_error_kind),
    nextAttemptAt: r.status === "pending" && !r.lease_owner ? ts(r.due_at ?? undefined) : undefined,
    createdAt: ts(r.created_at),
    test: r.test === true,
  };
}

const DELIVERY_ID = /^dlv_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Handlers of messaging.console.v1.DeliveryService (spec §Delivery rules
 * 3): deliveries of an endpoint or an event, one delivery, its attempts, a
 * manual retry (Dispatcher.retryManually), and a test event sent to one
 * endpoint (Dispatcher.sendTest; its type is checked by the contract), and
 * the recovery of an endpoint's deliveries in a window (Dispatcher.recover).
 */
export function createDeliveryService(deps: {
  store: DeliveryStore;
  endpoints: EndpointStore;
  events: EventBus;
  dispatcher: Dispatcher;
}): Partial<ServiceImpl<typeof DeliveryService>> {
  const { store, endpoints, events, dispatcher } = deps;
  const requireDelivery = async (id: string) => {
    const record = DELIVERY_ID.test(id) ? await store.get(id) : null;
    if (!record) throw notFound("delivery", id);
    return record;
  };

  return {
    async listDeliveries(req, context) {
      if (req.endpointId === "" && req.eventId === "") throw invalidArgument("endpoint_id", "one of endpoint_id and event_id is required");
      let workspaceId: string;
      if (req.endpointId !== "") {
        workspaceId = (await requireEndpoint(endpoints, req.endpointId)).workspace_id;
      } else {
        const event = isUuid(req.eventId) ? await events.get(req.eventId) : null;
        if (!event) throw notFound("event", req.eventId);
        workspaceId = event.workspace_id;
      }
      requireWorkspaceAccess(context, workspaceId, "read");
      const page = await store.list({ workspaceId, endpointId: req.endpointId || undefined, eventId: req.eventId || undefined }, req);
      return { object: "list", data: page.items.map(deliveryToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
    async getDelivery(req, context) {
      const record = await requireDelivery(req.id);
      requireWorkspaceAccess(context, record.workspace_id, "read");
      return { delivery: deliveryToProto(record) };
    },
    async retryDelivery(req, context) {
      const record = await requireDelivery(req.id);
      requireWorkspaceAccess(context, record.workspace_id, "write");
      const attempt = await dispatcher.retryManually(record);
      return { attempt: attemptToProto(attempt), delivery: deliveryToProto((await store.get(record._id)) ?? record) };
    },
    async sendTestEvent(req, context) {
      const endpoint = await requireEndpoint(endpoints, req.endpointId);
      requireWorkspaceAccess(context, endpoint.workspace_id, "write");
      const sent = await dispatcher.sendTest(endpoint, req.type as EventType);
      return { delivery: deliveryToProto(sent.delivery), ...(sent.attempt ? { attempt: attemptToProto(sent.attempt) } : {}) };
    },
    async recoverDeliveries(req, context) {
      const endpoint = await requireEndpoint(endpoints, req.endpointId);
      requireWorkspaceAccess(context, endpoint.workspace_id, "write");
      const since = timestampDate(req.since!); // required by the contract
      const until = req.until ? timestampDate(req.until) : new Date();
      if (until.getTime() <= since.getTime()) throw invalidArgument("until", "must be after since");
      const unselected = req.eventTypes.filter((type) => !endpoint.events.includes(type));
      if (unselected.length > 0) {
        throw invalidArgument("event_types", `each must be one of the endpoint's event types (${endpoint.events.join(", ")}); not ${unselected.join(", ")}`);
      }
      if (!endpoint.enabled) {
        throw apiError("failed_precondition", `The endpoint ${endpoint._id} is disabled; enable it before recovering its deliveries`, { endpoint_id: endpoint._id });
      }
      const types = req.eventTypes.length > 0 ? [...req.eventTypes] : endpoint.events;
      const r = await dispatcher.recover(endpoint, { since, until, types, dryRun: req.dryRun });
      return {
        object: "delivery_recovery",
        recoveredCount: r.failed + r.unattempted,
        failedCount: r.failed,
        unattemptedCount: r.unattempted,
        scannedCount: r.scanned,
        dryRun: req.dryRun,
        nextSince: ts(r.nextSince),
      };
    },
    async listDeliveryAttempts(req, context) {
      const record = await requireDelivery(req.deliveryId);
      requireWorkspaceAccess(context, record.workspace_id, "read");
      const page = await store.listAttempts(record._id, req);
      return { object: "list", data: page.items.map(attemptToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
  };
}
