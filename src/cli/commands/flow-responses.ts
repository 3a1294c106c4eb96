import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Command } from "commander";
import { FlowResponseService, ListFlowResponsesResponseSchema } from "../../../gen/messaging/console/v1/flow_responses_pb.js";
import { FlowResponseSchema } from "../../../gen/messaging/v1/flow_responses_pb.js";
import { UsageError, wholeNumber, type CliContext } from "../context.js";

/** `msgsvc flow-responses list|get|file`: a workspace's form submissions and the files uploaded in them. */
export function flowResponseCommands(ctx: CliContext): Command {
  const columns = ["id", "received_at", "from", "flow_id", "flow_token", "source_message_id", "files"];
  const flows = new Command("flow-responses").description("see form submissions (flow responses) and download their files");
  flows
    .command("list")
    .description("list a workspace's flow responses, newest first")
    .requiredOption("--workspace <id>", "workspace of the responses")
    .option("--flow-id <digits>", "only responses to this form", "")
    .option("--flow-token <token>", "only responses with this flow token", "")
    .option("--message <id>", "only responses whose own message or whose form's message is this one (msg_…)", "")
    .option("--page-size <n>", "items per page (at most 100)", "50")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; flowId: string; flowToken: string; message: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(FlowResponseService).listFlowResponses({
        workspaceId: o.workspace,
        flowId: o.flowId,
        flowToken: o.flowToken,
        messageId: o.message,
        pageSize: wholeNumber("--page-size", o.pageSize),
        pageToken: o.pageToken,
      });
      ctx.printList(ListFlowResponsesResponseSchema, res, columns, !!o.json);
    });
  flows
    .command("get <id>")
    .description("show one flow response (frs_…) with its fields and files")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { flowResponse } = await ctx.client(FlowResponseService).getFlowResponse({ id });
      ctx.print(FlowResponseSchema, flowResponse!, [...columns, "response"], !!o.json);
    });
  flows
    .command("file <id> <index>")
    .description("download file INDEX (from 0) of a flow response, streamed to a file")
    .option("--output <path>", "where to write it (default: its file name, in the current folder)")
    .action(async (id: string, index: string, o: { output?: string }) => {
      const at = wholeNumber("<index>", index);
      if (at < 0) throw new UsageError("<index>: must be 0 or more");
      const client = ctx.client(FlowResponseService);
      const { flowResponse } = await client.getFlowResponse({ id });
      const name = flowResponse?.files[at]?.fileName;
      const target = o.output ?? (name ? path.basename(name) : `${id}-${at}`);
      const partial = `${target}.part`;
      let bytes = 0;
      try {
        await pipeline(
          (async function* () {
            for await (const body of client.getFlowResponseFile({ id, index: at })) {
              bytes += body.data.length;
              yield body.data;
            }
          })(),
          createWriteStream(partial) as Writable,
        );
        await rename(partial, target);
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
      ctx.say(`Saved ${target} (${bytes} bytes)`, false);
    });
  return flows;
}
