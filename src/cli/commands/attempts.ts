import { Command } from "commander";
import { ListDeliveryAttemptsResponseSchema, DeliveryService } from "../../../gen/messaging/console/v1/deliveries_pb.js";
import { wholeNumber, type CliContext } from "../context.js";

/** Columns of an attempt in tables. */
export const attemptColumns = ["id", "trigger", "number", "started_at", "duration_ms", "http_status", "error_kind", "succeeded", "next_attempt_at"];

/** `msgsvc attempts …`: list the attempts of a delivery. */
export function attemptCommands(ctx: CliContext): Command {
  const attempts = new Command("attempts").description("see the attempts of webhook deliveries");
  attempts
    .command("list")
    .description("list the attempts of a delivery, newest first")
    .requiredOption("--delivery <id>", "the delivery (dlv_…)")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { delivery: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(DeliveryService).listDeliveryAttempts({ deliveryId: o.delivery, pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      ctx.printList(ListDeliveryAttemptsResponseSchema, res, attemptColumns, !!o.json);
    });
  return attempts;
}
