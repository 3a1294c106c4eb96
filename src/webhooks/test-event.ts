import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ContactEventDataSchema, MessageEventDataSchema } from "../../gen/messaging/v1/events_pb.js";
import { OptOutSource, OptOutStatus } from "../../gen/messaging/v1/opt_outs_pb.js";
import { FlowResponseSchema } from "../../gen/messaging/v1/flow_responses_pb.js";
import type { EventType } from "../events/event-bus.js";
import { toRestJson } from "../contract/rest-json.js";

/** The sample message every test event about a message names. */
export const TEST_MESSAGE_ID = "msg_00000000-0000-4000-8000-000000000000";

/**
 * Sample data of a test event of `type` (SendTestEvent), in REST JSON, of
 * the same shape a real event of that type has (built from the same
 * messages: MessageEventData, FlowResponse, ContactEventData), at `now`. Its ids are all zeros
 * so that a receiver cannot take it for a real message.
 */
export function sampleEventData(type: EventType, now: Date): JsonObject {
  const occurredAt = timestampFromDate(now);
  if (type === "flow.completed") {
    return toRestJson(
      FlowResponseSchema,
      create(FlowResponseSchema, {
        id: "frs_00000000-0000-4000-8000-000000000000",
        object: "flow_response",
        messageId: "msg_00000000-0000-4000-8000-000000000001",
        from: "4915100000000",
        flowToken: "test-flow-token",
        sourceMessageId: TEST_MESSAGE_ID,
        response: { fields: {} },
        files: [],
        receivedAt: occurredAt,
      }),
    );
  }
  if (type === "contact.opted_out" || type === "contact.opted_in") {
    const out = type === "contact.opted_out";
    return toRestJson(
      ContactEventDataSchema,
      create(ContactEventDataSchema, {
        phoneNumber: "4915100000000",
        status: out ? OptOutStatus.OPTED_OUT : OptOutStatus.OPTED_IN,
        source: OptOutSource.REPLY,
        keyword: out ? "STOP" : "START",
        messageId: "msg_00000000-0000-4000-8000-000000000001",
        occurredAt,
      }),
    );
  }
  const status = type.slice("message.".length);
  const received = type === "message.received";
  return toRestJson(
    MessageEventDataSchema,
    create(MessageEventDataSchema, {
      messageId: received ? "msg_00000000-0000-4000-8000-000000000001" : TEST_MESSAGE_ID,
      to: received ? "15550000000" : "4915100000000",
      status,
      waMessageId: type === "message.canceled" ? "" : "wamid.TEST",
      occurredAt,
      error: type === "message.failed" ? { code: 131026, title: "Message undeliverable" } : undefined,
      ...(received ? { from: "4915100000000", text: "This is a test reply", replyToMessageId: TEST_MESSAGE_ID } : {}),
    }),
  );
}
