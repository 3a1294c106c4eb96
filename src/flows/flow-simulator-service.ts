import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { UploadSimulatorMediaRequestSchema, type SimulatorService, type UploadSimulatorMediaRequest } from "../../gen/messaging/console/v1/simulator_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import type { MessageRecord, MessageStore } from "../messages/message-store.js";
import { MAX_SIMULATOR_MEDIA_BYTES, SimulatorMediaTooLargeError } from "../network/simulator-media.js";
import type { Simulator } from "../network/simulator.js";
import { apiError, invalidArgument, notFound } from "../shared/errors.js";
import { contractViolations } from "../contract/field-rules.js";
import { Violations } from "../shared/validation.js";
import type { FlowResponseStore } from "./flow-response-store.js";
import { mimeTypeOf } from "./submission.js";


/**
 * The flows part of messaging.console.v1.SimulatorService (README §Forms):
 * UploadSimulatorMedia streams a file into the simulated network's media
 * store; SimulateFlowResponse makes the recipient of a form message submit
 * it, with those media, as WhatsApp would report it. Both need write access
 * to the message's workspace and NETWORK=simulator.
 */
export function createFlowSimulatorService(deps: {
  simulator: Simulator | undefined;
  messages: MessageStore;
  responses: FlowResponseStore;
}): Partial<ServiceImpl<typeof SimulatorService>> {
  const { simulator, messages, responses } = deps;

  /** The outbound message `id` for a write by the caller, with the simulator. */
  async function formMessage(id: string, context: Parameters<typeof requireWorkspaceAccess>[0]): Promise<{ message: MessageRecord; simulator: Simulator }> {
    const message = await messages.findOutbound({ _id: id });
    if (!message) throw notFound("message", id);
    requireWorkspaceAccess(context, message.workspace_id, "write");
    if (!simulator) throw apiError("invalid_argument", "Forms can only be simulated with NETWORK=simulator", { field: "message_id", rule: "needs the simulator" });
    return { message, simulator };
  }

  return {
    async uploadSimulatorMedia(requests, context) {
      const iterator = requests[Symbol.asyncIterator]();
      const first = await iterator.next();
      if (first.done) throw invalidArgument("message_id", "is required in the first request");
      const head: UploadSimulatorMediaRequest = first.value;
      // A client stream passes the validation interceptor unchecked: its first message carries the file's metadata.
      new Violations()
        .addIf(head.messageId === "", "message_id", "is required in the first request")
        .addIf(head.fileName === "", "file_name", "is required in the first request")
        .addAll(contractViolations(UploadSimulatorMediaRequestSchema, head))
        .check();
      const { message, simulator: sim } = await formMessage(head.messageId, context);
      async function* data(): AsyncIterable<Uint8Array> {
        if (head.data.length > 0) yield head.data;
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value.data;
      }
      try {
        const medium = await sim.media.upload(
          { workspaceId: message.workspace_id, messageId: message._id },
          head.fileName,
          mimeTypeOf(head.mimeType || undefined, head.fileName),
          data(),
        );
        return { mediaId: medium.id, sizeBytes: BigInt(medium.sizeBytes), sha256: medium.sha256, mimeType: medium.mimeType };
      } catch (err) {
        if (err instanceof SimulatorMediaTooLargeError) throw invalidArgument("data", `must be at most ${MAX_SIMULATOR_MEDIA_BYTES} bytes in all`);
        throw err;
      }
    },

    async simulateFlowResponse(req, context) {
      const response: JsonObject = req.response ?? {};
      const fields = new Set(req.files.map((f) => f.field));
      // The number of files, the token's and each file's shape are rules of the contract (simulator.proto).
      const v = new Violations().addIf("flow_token" in response, "response.flow_token", "is not a form field; set flow_token instead");
      req.files.forEach((f, i) => v.addIf(f.field in response, `files[${i}].field`, "is also a key of response"));
      v.check();
      const { message, simulator: sim } = await formMessage(req.messageId, context);
      if (!message.wa_message_id) {
        throw apiError("invalid_argument", `Message ${message._id} has not been accepted by the network yet (status ${message.status})`, {
          field: "message_id",
          rule: "must have been accepted by the network",
        });
      }
      if (!message.flow_token) throw invalidArgument("message_id", "must be a message whose template carries a form (flow)");
      const media = await Promise.all(req.files.map((f) => sim.media.get(f.mediaId)));
      const unknown = new Violations();
      media.forEach((m, i) => unknown.addIf(m?.messageId !== message._id, `files[${i}].media_id`, `is not a medium uploaded for message ${message._id}`));
      unknown.check();

      // response_json as WhatsApp sends it in an nfm_reply: the fields, each file
      // field as a list of {file_name, mime_type, sha256 (base64), id}, and the token
      // (https://developers.facebook.com/docs/whatsapp/flows/reference/media_upload).
      const json: JsonObject = { ...response };
      for (const field of fields) {
        json[field] = req.files.flatMap((f, i) => {
          const m = media[i];
          return f.field === field && m ? [{ file_name: m.fileName, mime_type: m.mimeType, sha256: Buffer.from(m.sha256, "hex").toString("base64"), id: m.id }] : [];
        });
      }
      json.flow_token = req.flowToken || message.flow_token;
      const networkId = await sim.injectFlowResponse(
        { networkMessageId: message.wa_message_id, recipient: message.to, senderPhoneNumber: message.from },
        JSON.stringify(json),
      );
      const submission = await messages.findInbound(networkId);
      const recorded = submission ? await responses.findByMessage(submission._id) : null;
      if (!submission || !recorded) throw apiError("internal", "The simulated submission was not recorded");
      return { messageId: submission._id, waMessageId: networkId, flowResponseId: recorded._id };
    },
  };
}
