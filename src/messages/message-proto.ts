import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { MessageStatus, type MessageSchema } from "../../gen/messaging/v1/messages_pb.js";
import type { MessageRecord, StoredStatus } from "./message-store.js";

const STATUS_TO_PROTO: Record<StoredStatus, MessageStatus> = {
  accepted: MessageStatus.ACCEPTED,
  sent: MessageStatus.SENT,
  delivered: MessageStatus.DELIVERED,
  read: MessageStatus.READ,
  failed: MessageStatus.FAILED,
  scheduled: MessageStatus.SCHEDULED,
  canceled: MessageStatus.CANCELED,
  received: MessageStatus.UNSPECIFIED,
};

/** The stored status of a MessageStatus filter, or undefined for UNSPECIFIED (no filter). */
export function statusFromProto(status: MessageStatus): StoredStatus | undefined {
  return (Object.entries(STATUS_TO_PROTO) as [StoredStatus, MessageStatus][]).find(([, p]) => p === status && p !== MessageStatus.UNSPECIFIED)?.[0];
}

const time = (date: Date | null | undefined) => (date ? timestampFromDate(date) : undefined);

/** The public form of an outbound message (messaging.v1.Message). */
export function messageToProto(record: MessageRecord): MessageInitShape<typeof MessageSchema> {
  return {
    messageId: record._id,
    object: "message",
    to: record.to,
    sender: record.sender_id ?? "",
    templateId: record.template_id ?? "",
    flowToken: record.flow_token ?? undefined,
    status: STATUS_TO_PROTO[record.status],
    waMessageId: record.wa_message_id ?? undefined,
    error: record.error ?? undefined,
    credits: BigInt(record.credits),
    createdAt: timestampFromDate(record.created_at),
    sentAt: time(record.sent_at),
    deliveredAt: time(record.delivered_at),
    readAt: time(record.read_at),
    failedAt: time(record.failed_at),
    sendAt: time(record.send_at),
    validUntil: time(record.valid_until),
    canceledAt: time(record.canceled_at),
  };
}
