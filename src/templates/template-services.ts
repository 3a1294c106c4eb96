import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  TemplateCategory as ConsoleTemplateCategory,
  TemplateStatus as ConsoleTemplateStatus,
  type TemplateSchema as ConsoleTemplateSchema,
  type TemplateService as ConsoleTemplateService,
} from "../../gen/messaging/console/v1/templates_pb.js";
import { TemplateCategory, TemplateStatus, type TemplateSchema, type TemplateService } from "../../gen/messaging/v1/templates_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { principalOf } from "../gateway/request-state.js";
import { apiError, notFound } from "../shared/errors.js";
import { Violations } from "../shared/validation.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import { MAX_VARIABLES, parseBody } from "./template-body.js";
import { categoryOf, type TemplateCategoryName, type TemplateRecord, type TemplateStore } from "./template-store.js";

/** The proto number of a category (both APIs number them alike). */
const CATEGORY_NUMBERS: Record<TemplateCategoryName, TemplateCategory> = {
  marketing: TemplateCategory.MARKETING,
  utility: TemplateCategory.UTILITY,
  authentication: TemplateCategory.AUTHENTICATION,
};

/** The category a CreateTemplate asks for: unset is utility. */
function categoryFromProto(category: ConsoleTemplateCategory): TemplateCategoryName {
  if (category === ConsoleTemplateCategory.MARKETING) return "marketing";
  if (category === ConsoleTemplateCategory.AUTHENTICATION) return "authentication";
  return "utility";
}

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
    category: CATEGORY_NUMBERS[categoryOf(record)],
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
    category: CATEGORY_NUMBERS[categoryOf(record)] as number as ConsoleTemplateCategory,
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
 * Handlers of messaging.console.v1.TemplateService. Create rules beyond
 * those of the contract (templates.proto: name, language, body length,
 * flow_id, example lengths): at most 100 well-named variables in the body;
 * examples and optional_variables naming variables of the body; one active
 * template per workspace, name and language.
 */
export function createConsoleTemplateService(deps: {
  templates: TemplateStore;
  workspaces: WorkspaceStore;
}): Partial<ServiceImpl<typeof ConsoleTemplateService>> {
  const { templates, workspaces } = deps;
  return {
    async createTemplate(req, context) {
      // The shapes of name, language, body, flow_id and the example values are rules of the contract (templates.proto).
      const violations = new Violations();
      const { variables, problems } = parseBody(req.body);
      for (const problem of problems) violations.add("body", problem);
      violations.addIf(variables.length > MAX_VARIABLES, "body", `must have at most ${MAX_VARIABLES} variables`);
      for (const name of Object.keys(req.examples)) {
        violations.addIf(!variables.includes(name), `examples.${name}`, "is not a variable of the body");
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
        category: categoryFromProto(req.category),
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
