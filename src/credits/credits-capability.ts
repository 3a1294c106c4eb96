import { CreditService } from "../../gen/messaging/console/v1/credits_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import { createCreditService } from "./credit-service.js";
import type { CreditStore } from "./credit-store.js";

/** Credits: top-ups and the ledger in the console (messaging.console.v1.CreditService). */
export function createCreditsCapability(platform: Platform, credits: CreditStore): Capability {
  return {
    name: "credits",
    consoleServices: [registerService(CreditService, createCreditService({ credits, workspaces: platform.workspaces }))],
    ensureIndexes: () => credits.ensureIndexes(),
    stop: () => credits.close(),
  };
}
