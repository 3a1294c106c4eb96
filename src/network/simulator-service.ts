import type { ServiceImpl } from "@connectrpc/connect";
import type { SimulatorService } from "../../gen/messaging/console/v1/simulator_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import type { MessageStore } from "../messages/message-store.js";
import { apiError, notFound } from "../shared/errors.js";
import type { Simulator } from "./simulator.js";

/**
 * Handlers of messaging.console.v1.SimulatorService. SimulateReply: the
 * recipient of an outbound message the simulated network accepted replies
 * with a text (1 to 4096 characters); refused with invalid_argument when
 * NETWORK is not the simulator or the message has no network id yet.
 */
export function createSimulatorService(deps: { simulator: Simulator | undefined; messages: MessageStore }): Partial<ServiceImpl<typeof SimulatorService>> {
  return {
    async simulateReply(req, context) {
      const message = await deps.messages.findOutbound({ _id: req.messageId });
      if (!message) throw notFound("message", req.messageId);
      requireWorkspaceAccess(context, message.workspace_id, "write");
      if (!deps.simulator) throw apiError("invalid_argument", "Replies can only be simulated with NETWORK=simulator", { field: "message_id", rule: "needs the simulator" });
      if (!message.wa_message_id) {
        throw apiError("invalid_argument", `Message ${message._id} has not been accepted by the network yet (status ${message.status})`, {
          field: "message_id",
          rule: "must have been accepted by the network",
        });
      }
      const networkId = await deps.simulator.injectReply(
        { networkMessageId: message.wa_message_id, recipient: message.to, senderPhoneNumber: message.from },
        req.text,
      );
      const reply = await deps.messages.findInbound(networkId);
      if (!reply) throw apiError("internal", "The simulated reply was not recorded");
      return { messageId: reply._id, waMessageId: networkId };
    },
  };
}
