import type { EventBus } from "../events/event-bus.js";
import type { Clock } from "../shared/clock.js";
import { apiError } from "../shared/errors.js";
import type { AttemptLog } from "./attempt-log.js";
import { automaticAttemptId, insertNew, manualAttemptId, type AttemptRecord, type DeliveryRecord, type DeliveryStore } from "./delivery-store.js";
import type { EndpointCache } from "./endpoint-cache.js";
import type { WebhookSender } from "./http-sender.js";
import { SecretKeyError } from "./signing-secret.js";

/**
 * Makes one manual attempt of `delivery` now (spec §Delivery rules 3): the
 * stored envelope, with a fresh signature, recorded as manual attempt n
 * (numbered on their own: the n-th manual attempt claims `<delivery>.m<n>`),
 * counted for the endpoint like any attempt. When it succeeds, the delivery
 * is succeeded and its automatic schedule ends: the claims of the remaining
 * automatic attempts are taken in its name, so that no worker makes them
 * (one already in flight still finishes). Answers once the attempt is done.
 *
 * @throws ConnectError failed_precondition when the endpoint is disabled or deleted, or the event is gone.
 */
export async function retryManually(
  o: { cache: EndpointCache; events: EventBus; store: DeliveryStore; sender: WebhookSender; log: AttemptLog; clock: Clock; maxAttempts: number },
  delivery: DeliveryRecord,
): Promise<AttemptRecord> {
  const endpoint = await o.cache.get(delivery.endpoint_id, 0);
  if (!endpoint) {
    throw apiError("failed_precondition", `The endpoint ${delivery.endpoint_id} of this delivery was deleted`, { endpoint_id: delivery.endpoint_id });
  }
  if (!endpoint.enabled) {
    throw apiError("failed_precondition", `The endpoint ${endpoint.id} is disabled; enable it before retrying its deliveries`, { endpoint_id: endpoint.id });
  }
  if (endpoint.secret === undefined) throw new SecretKeyError(endpoint.secretError ?? "no signing secret");
  const event = await o.events.collection.findOne({ _id: delivery.event_id });
  if (!event) throw apiError("failed_precondition", `The event ${delivery.event_id} of this delivery no longer exists`);

  const { claims } = o.store;
  let number = 1;
  while (await claims.findOne({ _id: manualAttemptId(delivery._id, number) }, { projection: { _id: 1 } })) number++;
  const claimOf = (n: number) => ({ _id: manualAttemptId(delivery._id, n), delivery_id: delivery._id, work: "manual", created_at: o.clock.now() });
  while (!(await insertNew(claims, [claimOf(number)]))[0]) number++;

  const outcome = await o.sender.send({ url: endpoint.url, body: event.body, secret: endpoint.secret, eventType: event.type, eventId: event._id, urgent: true });
  const item = { deliveryId: delivery._id, workspaceId: delivery.workspace_id, endpointId: delivery.endpoint_id, eventId: delivery.event_id };
  await o.log.record({ item, trigger: "manual", number, url: endpoint.url, outcome, counts: true, nextAttemptAt: null }, true);
  const id = manualAttemptId(delivery._id, number);
  if (outcome.succeeded) {
    const rest = [];
    for (let n = 2; n <= o.maxAttempts; n++) {
      rest.push({ _id: automaticAttemptId(delivery._id, n), delivery_id: delivery._id, work: `superseded:${id}`, created_at: o.clock.now() });
    }
    await insertNew(claims, rest);
  }
  return (await o.store.attempts.findOne({ _id: id })) as AttemptRecord;
}
