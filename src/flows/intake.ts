import type { MessageRecord, MessageStore } from "../messages/message-store.js";
import type { Clock } from "../shared/clock.js";
import { isDuplicateKeyError } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import type { FileFetcher } from "./file-fetch.js";
import type { FlowResponseRecord, FlowResponseStore } from "./flow-response-store.js";
import { parseSubmission } from "./submission.js";

/** How the message that carried a form is found for a submission. */
export interface Trace {
  /** The workspace's message to the submitter whose flow token the submission carries, or null. */
  source: MessageRecord | null;
  /** The message whose form was submitted: `source`, else the message replied to when it carried a form. */
  form: MessageRecord | null;
}

/**
 * Traces a submission back to the message that carried its form
 * (deliverable "flow tokens"): `source` is an outbound message of the
 * workspace to the submitter with the submission's flow token; when several
 * carry the token (a caller may reuse one), the message the network says was
 * answered (WhatsApp: context.id), else the newest. `form` is `source`, else
 * the answered message when it carried a form (so template and flow are
 * known even when a flow endpoint replaced the token).
 */
export async function traceSubmission(messages: MessageStore, inbound: MessageRecord, flowToken: string): Promise<Trace> {
  const candidates = flowToken === "" ? [] : await messages.findFormMessages(inbound.workspace_id, inbound.from, flowToken);
  const source = candidates.find((m) => m._id === inbound.reply_to_message_id) ?? candidates[0] ?? null;
  if (source) return { source, form: source };
  const answered = inbound.reply_to_message_id
    ? await messages.findOutbound({ _id: inbound.reply_to_message_id }, inbound.workspace_id)
    : null;
  return { source: null, form: answered?.send?.flow ? answered : null };
}

/**
 * The flows capability's part of the inbound path (registered with
 * inbound.onInbound("flow_response")): records the submission of an inbound
 * flow_response message as a flow response (frs_<uuid>) with its files
 * pending, traced to its form's message, held by this process, and begins
 * the fetch of its files (which fires flow.completed, also for a submission
 * without files). Idempotent: a response already recorded for the message is
 * left to its fetch (queued: a worker takes it over if its process stopped).
 */
export function createFlowIntake(deps: {
  responses: FlowResponseStore;
  messages: MessageStore;
  fetcher: FileFetcher;
  clock: Clock;
}): (message: MessageRecord) => Promise<void> {
  const { responses, messages, fetcher, clock } = deps;
  return async (message) => {
    if (await responses.findByMessage(message._id)) return;
    if (message.content?.type !== "flow_response") return;
    const submission = parseSubmission(message.content.responseJson);
    const { source, form } = await traceSubmission(messages, message, submission.flowToken);
    const now = clock.now();
    const held = fetcher.held(now);
    const record: FlowResponseRecord = {
      _id: newId("frs"),
      workspace_id: message.workspace_id,
      message_id: message._id,
      from: message.from,
      flow_token: submission.flowToken,
      flow_id: form?.send?.flow?.flow_id ?? null,
      source_message_id: source?._id ?? null,
      template_id: form?.template_id ?? null,
      response_json: JSON.stringify(submission.response),
      files: submission.files.map((f, index) => ({
        field: f.field,
        index,
        file_name: f.fileName,
        mime_type: f.mimeType,
        state: "pending",
        media: f.media,
        stated_sha256: f.sha256,
        gridfs_id: null,
        size_bytes: null,
        sha256: null,
        error: null,
      })),
      received_at: message.created_at,
      created_at: now,
      fetch: { state: "pending", attempts: 0, last_error: null },
      ...held.fields,
      ready_at: null,
      published_at: null,
    };
    try {
      await responses.insert(record);
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      return; // recorded by a concurrent application of the same report, which fetches it
    }
    fetcher.begin(record, held.lease);
  };
}
