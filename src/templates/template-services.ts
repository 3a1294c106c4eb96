import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  TemplateStatus as ConsoleTemplateStatus,
  type TemplateSchema as ConsoleTemplateSchema,
  type TemplateService as ConsoleTemplateService,
} from "../../gen/messaging/console/v1/templates_pb.js";
import { TemplateStatus, type TemplateSchema, type TemplateService } from "../../gen/messaging/v1/templates_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { principalOf } from "../gateway/request-state.js";
import { apiError, notFound } from "../shared/errors.js";
import { charLength, Violations } from "../shared/validation.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import { MAX_BODY_CHARS, MAX_VARIABLE_VALUE_CHARS, MAX_VARIABLES, parseBody } from "./template-body.js";
import type { TemplateRecord, TemplateStore } from "./template-store.js";

/** The public form of a template (messaging.v1.Template). */
export function templateToProto(record: TemplateRecord): MessageInitShape<typeof TemplateSchema> {
  return {
    id: record._id,
    object: "template",
    name: record.name,
    language: record.language,
    status: record.status === "active" ? TemplateStatus.ACTIVE : TemplateStatus.ARCHIVED,
    body: record.body,
    variables: record.variables,
    flow: record.flow_id ? { flowId: record.flow_id } : undefined,
    createdAt: timestampFromDate(record.created_at),
  };
}

/** The console form of a template (messaging.console.v1.Template). */
export function consoleTemplateToProto(record: TemplateRecord): MessageInitShape<typeof ConsoleTemplateSchema> {
  return {
    id: record._id,
    object: "template",
    workspaceId: record.workspace_id,
    name: record.name,
    language: record.language,
    status: record.status === "active" ? ConsoleTemplateStatus.ACTIVE : ConsoleTemplateStatus.ARCHIVED,
    body: record.body,
    variables: record.variables,
    flowId: record.flow_id ?? undefined,
    createdAt: timestampFromDate(record.created_at),
    archivedAt: record.archived_at ? timestampFromDate(record.archived_at) : undefined,
  };
}

/**
 * GET /v1/templates (scope templates:read): the workspace's active
 * templates with the variables each needs, newest first, paged. Archived
 * templates are left out: they cannot be used.
 */
export function createPublicTemplateService(templates: TemplateStore): Partial<ServiceImpl<typeof TemplateService>> {
  return {
    async listTemplates(req, context) {
      const page = await templates.list(principalOf(context).workspaceId, req, true);
      return { object: "list", data: page.items.map(templateToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
  };
}

/**
 * Handlers of messaging.console.v1.TemplateService. Create rules: name of
 * lower-case letters, digits and "_" (1 to 512, WhatsApp's rule); language
 * "xx" or "xx_YY"; body 1 to 1024 characters with at most 100 well-named
 * variables; examples and optional_variables naming variables of the body;
 * flow_id digits; one active template per workspace, name and language.
 */
export function createConsoleTemplateService(deps: {
  templates: TemplateStore;
  workspaces: WorkspaceStore;
}): Partial<ServiceImpl<typeof ConsoleTemplateService>> {
  const { templates, workspaces } = deps;
  return {
    async createTemplate(req, context) {
      const violations = new Violations()
        .addIf(!/^[a-z0-9_]{1,512}$/.test(req.name), "name", "must be 1 to 512 lower-case letters, digits or '_'")
        .addIf(!/^[a-z]{2,3}(_[A-Z]{2})?$/.test(req.language), "language", "must be a language code such as en or pt_BR")
        .addIf(req.body.trim() === "" || charLength(req.body) > MAX_BODY_CHARS, "body", `must be 1 to ${MAX_BODY_CHARS} characters`)
        .addIf(!/^(\d{1,30})?$/.test(req.flowId), "flow_id", "must be 1 to 30 digits, or empty");
      const { variables, problems } = parseBody(req.body);
      for (const problem of problems) violations.add("body", problem);
      violations.addIf(variables.length > MAX_VARIABLES, "body", `must have at most ${MAX_VARIABLES} variables`);
      for (const [name, example] of Object.entries(req.examples)) {
        violations.addIf(!variables.includes(name), `examples.${name}`, "is not a variable of the body");
        violations.addIf(charLength(example) > MAX_VARIABLE_VALUE_CHARS, `examples.${name}`, `must be at most ${MAX_VARIABLE_VALUE_CHARS} characters`);
      }
      req.optionalVariables.forEach((name, i) => {
        violations.addIf(!variables.includes(name), `optional_variables[${i}]`, `is not a variable of the body (got ${JSON.stringify(name)})`);
      });
      violations.check();
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "write");
      if (await templates.findActive(req.workspaceId, req.name, req.language)) {
        throw apiError("conflict", `The workspace already has an active template ${req.name} in language ${req.language}`, { field: "name" });
      }
      const record = await templates.create({
        workspace_id: req.workspaceId,
        name: req.name,
        language: req.language,
        body: req.body,
        variables: variables.map((name) => ({
          name,
          required: !req.optionalVariables.includes(name),
          example: req.examples[name] ?? "",
        })),
        flow_id: req.flowId || null,
      });
      return { template: consoleTemplateToProto(record) };
    },
    async listTemplates(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const page = await templates.list(req.workspaceId, req);
      return { object: "list", data: page.items.map(consoleTemplateToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
    async getTemplate(req, context) {
      const record = await templates.get(req.id);
      if (!record) throw notFound("template", req.id);
      requireWorkspaceAccess(context, record.workspace_id, "read");
      return { template: consoleTemplateToProto(record) };
    },
    async archiveTemplate(req, context) {
      const existing = await templates.get(req.id);
      if (!existing) throw notFound("template", req.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const record = await templates.archive(req.id);
      if (!record) throw notFound("template", req.id);
      return { template: consoleTemplateToProto(record) };
    },
  };
}
