import { SenderService as ConsoleSenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { SenderService } from "../../gen/messaging/v1/senders_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import { createConsoleSenderService, createPublicSenderService } from "./sender-services.js";
import type { SenderStore } from "./sender-store.js";

/** Senders: GET /v1/senders and console management (messaging.console.v1.SenderService). */
export function createSendersCapability(platform: Platform, senders: SenderStore): Capability {
  return {
    name: "senders",
    publicServices: [registerService(SenderService, createPublicSenderService(senders))],
    consoleServices: [registerService(ConsoleSenderService, createConsoleSenderService({ senders, workspaces: platform.workspaces }))],
    ensureIndexes: () => senders.ensureIndexes(),
  };
}
