import { Command } from "commander";
import { ListTemplatesResponseSchema, TemplateCategory, TemplateSchema, TemplateService, type Template } from "../../../gen/messaging/console/v1/templates_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { formatTable, splitList, UsageError, wholeNumber, type CliContext } from "../context.js";

/** Parses "name=Ada,code=123456" into a map, or throws UsageError. */
function parseExamples(value: string): Record<string, string> {
  const examples: Record<string, string> = {};
  for (const pair of splitList(value)) {
    const at = pair.indexOf("=");
    if (at < 1) throw new UsageError(`--examples: expected name=value pairs separated by commas, got ${JSON.stringify(pair)}`);
    examples[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return examples;
}

/** The --category values. */
const CATEGORIES: Record<string, TemplateCategory> = {
  marketing: TemplateCategory.MARKETING,
  utility: TemplateCategory.UTILITY,
  authentication: TemplateCategory.AUTHENTICATION,
};

/** `msgsvc templates …`: create, list, archive. */
export function templateCommands(ctx: CliContext): Command {
  const columns = ["id", "name", "language", "category", "status", "variables", "flow_id", "body"];
  const print = (value: Template | Template[], json: boolean) => {
    if (json) return ctx.print(TemplateSchema, value, columns, true);
    // People see the variable names (optional ones with "?"); --json has the full objects.
    const rows = (Array.isArray(value) ? value : [value]).map((t) => ({
      ...toRestJson(TemplateSchema, t),
      variables: t.variables.map((v) => (v.required ? v.name : `${v.name}?`)),
    }));
    ctx.say(formatTable(rows, columns), false);
  };
  const templates = new Command("templates").description("manage message templates");
  templates
    .command("create")
    .description("create a template; its variables are read from the body ({{name}})")
    .requiredOption("--workspace <id>", "workspace of the template")
    .requiredOption("--name <name>", "template name as approved on the network, for example order_update")
    .requiredOption("--language <code>", "language code, for example en or pt_BR")
    .requiredOption("--body <text>", 'body with variables, for example "Hello {{name}}, your code is {{code}}"')
    .option("--flow-id <id>", "identifier of the form (flow) the template carries", "")
    .option("--examples <pairs>", "example values, for example name=Ada,code=123456", "")
    .option("--optional <names>", "comma-separated variables a send may leave out", "")
    .option("--category <category>", "WhatsApp's category: marketing, utility or authentication", "utility")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; name: string; language: string; body: string; flowId: string; examples: string; optional: string; category: string; json?: boolean }) => {
      const category = CATEGORIES[o.category];
      if (category === undefined) throw new UsageError(`--category: must be one of ${Object.keys(CATEGORIES).join(", ")}, got ${JSON.stringify(o.category)}`);
      const { template } = await ctx.client(TemplateService).createTemplate({
        workspaceId: o.workspace,
        name: o.name,
        language: o.language,
        body: o.body,
        flowId: o.flowId,
        examples: parseExamples(o.examples),
        optionalVariables: splitList(o.optional),
        category,
      });
      print(template!, !!o.json);
    });
  templates
    .command("list")
    .description("list a workspace's templates, newest first")
    .requiredOption("--workspace <id>", "workspace of the templates")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(TemplateService).listTemplates({ workspaceId: o.workspace, pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      if (o.json) return ctx.printList(ListTemplatesResponseSchema, res, columns, true);
      print(res.data, false);
      if (res.nextPageToken) ctx.say(`more: --page-token ${res.nextPageToken}`, false);
    });
  templates
    .command("get <id>")
    .description("show one template, archived ones included")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { template } = await ctx.client(TemplateService).getTemplate({ id });
      print(template!, !!o.json);
    });
  templates
    .command("archive <id>")
    .description("archive a template: later sends with it are refused")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { template } = await ctx.client(TemplateService).archiveTemplate({ id });
      print(template!, !!o.json);
    });
  return templates;
}
