import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { Command } from "commander";
import { Code, ConnectError } from "@connectrpc/connect";
import { FlowResponseService } from "../../../gen/messaging/console/v1/flow_responses_pb.js";
import { SimulatorService } from "../../../gen/messaging/console/v1/simulator_pb.js";
import { CommandFailure, UsageError, type CliContext } from "../context.js";

/** Bytes per UploadSimulatorMedia request. */
const UPLOAD_CHUNK_BYTES = 64 * 1024;

/** Reads `--file field=path` into its field and path, or throws UsageError. */
async function fileOption(value: string): Promise<{ field: string; file: string }> {
  const at = value.indexOf("=");
  const [field, file] = at > 0 ? [value.slice(0, at), value.slice(at + 1)] : ["", ""];
  if (!field || !file) throw new UsageError(`--file: must be field=path, got ${JSON.stringify(value)}`);
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) throw new UsageError(`--file: ${file} is not a readable file`);
  return { field, file };
}

/** Reads `--response` as a JSON object, or throws UsageError. */
function responseOption(value: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new UsageError(`--response: must be a JSON object: ${(err as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new UsageError("--response: must be a JSON object");
  return parsed as JsonObject;
}

/** Longest wait of `simulate flow --wait`, in ms. */
const WAIT_MS = 30_000;

/**
 * Waits until flow response `id` can be read (the console's GetFlowResponse
 * answers it once its files are settled and flow.completed fired), asking
 * every 100 ms.
 *
 * @throws CommandFailure timeout after WAIT_MS; the console's error for anything but not_found.
 */
async function completed(ctx: CliContext, id: string): Promise<void> {
  const client = ctx.client(FlowResponseService);
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      await client.getFlowResponse({ id });
      return;
    } catch (err) {
      if (!(err instanceof ConnectError) || err.code !== Code.NotFound) throw err;
    }
    if (Date.now() > deadline) throw new CommandFailure("timeout", `flow response ${id}: its files were not settled within ${WAIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `msgsvc simulate …`: play the recipient on the simulated network (NETWORK=simulator). */
export function simulateCommands(ctx: CliContext): Command {
  const simulate = new Command("simulate").description("play the recipient on the simulated messaging network");
  simulate
    .command("reply")
    .description("the recipient of a sent message replies to it (fires message.received)")
    .requiredOption("--message <id>", "the message replied to (msg_…)")
    .requiredOption("--text <text>", "text of the reply")
    .option("--json", "print JSON")
    .action(async (o: { message: string; text: string; json?: boolean }) => {
      const res = await ctx.client(SimulatorService).simulateReply({ messageId: o.message, text: o.text });
      if (o.json) ctx.printJson({ message_id: res.messageId, wa_message_id: res.waMessageId });
      else ctx.say(`Reply recorded as ${res.messageId} (${res.waMessageId})`, false);
    });
  simulate
    .command("flow")
    .description("the recipient of a form message submits the form, with files (fires flow.completed once the files are stored)")
    .requiredOption("--message <id>", "the message that carried the form (msg_…)")
    .option("--response <json>", "the submitted fields as a JSON object", "{}")
    .option("--file <field=path>", "a file uploaded in the form field (repeatable; type from the file name)", (v: string, all: string[]) => [...all, v], [])
    .option("--flow-token <token>", "submit with this flow token instead of the message's")
    .option("--wait", "answer once the files are stored and flow.completed fired (at most 30 s)")
    .option("--json", "print JSON")
    .action(async (o: { message: string; response: string; file: string[]; flowToken?: string; wait?: boolean; json?: boolean }) => {
      const response = responseOption(o.response);
      const files = await Promise.all(o.file.map(fileOption));
      const client = ctx.client(SimulatorService);
      const uploaded: { field: string; mediaId: string }[] = [];
      for (const { field, file } of files) {
        // Streamed in chunks: the file is never read into memory whole.
        async function* requests() {
          yield { messageId: o.message, fileName: path.basename(file) };
          for await (const chunk of createReadStream(file, { highWaterMark: UPLOAD_CHUNK_BYTES })) yield { data: chunk as Buffer };
        }
        const medium = await client.uploadSimulatorMedia(requests());
        uploaded.push({ field, mediaId: medium.mediaId });
        ctx.say(`Uploaded ${file} (${medium.sizeBytes} bytes, ${medium.mimeType}) as medium ${medium.mediaId}`, o.json ?? false);
      }
      const res = await client.simulateFlowResponse({ messageId: o.message, response, files: uploaded, flowToken: o.flowToken ?? "" });
      if (o.wait) await completed(ctx, res.flowResponseId);
      if (o.json) ctx.printJson({ flow_response_id: res.flowResponseId, message_id: res.messageId, wa_message_id: res.waMessageId, completed: !!o.wait });
      else ctx.say(`Form submitted: flow response ${res.flowResponseId}, message ${res.messageId} (${res.waMessageId})${o.wait ? "; its files are stored and flow.completed fired" : ""}`, false);
    });
  return simulate;
}
