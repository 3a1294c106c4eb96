import { AccountService } from "../../gen/messaging/v1/account_pb.js";
import type { Capability } from "../capability.js";
import { registerService } from "../gateway/services.js";
import { createAccountService } from "./account-service.js";

/** GET /v1/me (spec §GET /v1/me). */
export function createAccountCapability(): Capability {
  return { name: "account", publicServices: [registerService(AccountService, createAccountService())] };
}
