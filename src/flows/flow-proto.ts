import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { FlowResponseSchema, type FlowResponse } from "../../gen/messaging/v1/flow_responses_pb.js";
import type { FlowResponseRecord } from "./flow-response-store.js";

/** The public form of a stored flow response (messaging.v1.FlowResponse; the data of flow.completed). */
export function flowResponseToProto(record: FlowResponseRecord): FlowResponse {
  return create(FlowResponseSchema, {
    id: record._id,
    object: "flow_response",
    messageId: record.message_id,
    from: record.from,
    flowToken: record.flow_token,
    flowId: record.flow_id ?? undefined,
    sourceMessageId: record.source_message_id ?? undefined,
    templateId: record.template_id ?? undefined,
    response: JSON.parse(record.response_json) as JsonObject,
    files: record.files.map((f) => ({
      field: f.field,
      index: f.index,
      fileName: f.file_name,
      mimeType: f.mime_type,
      sizeBytes: f.size_bytes === null ? undefined : BigInt(f.size_bytes),
      error: f.error ?? undefined,
      sha256: f.sha256 ?? undefined,
    })),
    receivedAt: timestampFromDate(record.received_at),
  });
}
