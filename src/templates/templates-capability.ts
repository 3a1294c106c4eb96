import { TemplateService as ConsoleTemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { TemplateService } from "../../gen/messaging/v1/templates_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import { createConsoleTemplateService, createPublicTemplateService } from "./template-services.js";
import type { TemplateStore } from "./template-store.js";

/** Templates: GET /v1/templates and console management (messaging.console.v1.TemplateService). */
export function createTemplatesCapability(platform: Platform, templates: TemplateStore): Capability {
  return {
    name: "templates",
    publicServices: [registerService(TemplateService, createPublicTemplateService(templates))],
    consoleServices: [registerService(ConsoleTemplateService, createConsoleTemplateService({ templates, workspaces: platform.workspaces }))],
    ensureIndexes: () => templates.ensureIndexes(),
  };
}
