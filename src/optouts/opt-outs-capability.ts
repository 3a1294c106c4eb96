import { OptOutService as ConsoleOptOutService } from "../../gen/messaging/console/v1/opt_outs_pb.js";
import { OptOutService } from "../../gen/messaging/v1/opt_outs_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import { createConsoleOptOutService, createPublicOptOutService } from "./opt-out-services.js";
import type { OptOuts } from "./opt-outs.js";

/**
 * The workspaces' opt-out lists (README "Sending messages", "The opt-out
 * list"): GET /v1/opt_outs for calling systems, the console's
 * OptOutService (list, add, remove, keywords), and the indexes of
 * `opt_outs`. The lists are changed by the inbound path (replies, network
 * failures) and consulted by the message service, which the messaging
 * capabilities build on the same OptOuts.
 */
export function createOptOutsCapability(platform: Platform, optOuts: OptOuts): Capability {
  return {
    name: "opt-outs",
    publicServices: [registerService(OptOutService, createPublicOptOutService(optOuts))],
    consoleServices: [registerService(ConsoleOptOutService, createConsoleOptOutService({ optOuts, workspaces: platform.workspaces }))],
    ensureIndexes: () => optOuts.store.ensureIndexes(),
  };
}
