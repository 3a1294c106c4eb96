import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { MessageStatus, QueuedReason, type MessageSchema } from "../../gen/messaging/v1/messages_pb.js";
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

const QUEUED_REASON_TO_PROTO = {
  sender_rate: QueuedReason.SENDER_RATE,
  recipient_pair_rate: QueuedReason.RECIPIENT_PAIR_RATE,
  daily_limit: QueuedReason.DAILY_LIMIT,
} as const;

/** The public form of an outbound message (messaging.v1.Message); its queued reason only while it waits (accepted, not handed to the network). */
export function messageToProto(record: MessageRecord): MessageInitShape<typeof MessageSchema> {
  const waiting = (record.status === "accepted" || record.status === "scheduled") && record.dispatch?.state === "pending" && record.dispatch.queued_reason ? record.dispatch : null;
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
    ...(waiting ? { queuedReason: QUEUED_REASON_TO_PROTO[waiting.queued_reason!], estimatedSendAt: time(waiting.estimated_send_at) } : {}),
  };
}
