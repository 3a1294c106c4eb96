import type { MessageShape } from "@bufbuild/protobuf";
import { Command } from "commander";
import { DeliveryAttemptSchema, DeliverySchema, DeliveryService, ListDeliveriesResponseSchema } from "../../../gen/messaging/console/v1/deliveries_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { CommandFailure, UsageError, wholeNumber, type CliContext } from "../context.js";
import { attemptColumns } from "./attempts.js";

const deliveryColumns = ["id", "event_type", "status", "attempt_count", "last_http_status", "last_error_kind", "next_attempt_at", "created_at"];

/** `msgsvc deliveries …`: list (by endpoint or event), get, retry (one manual attempt now). */
export function deliveryCommands(ctx: CliContext): Command {
  const client = () => ctx.client(DeliveryService);
  const deliveries = new Command("deliveries").description("see and retry webhook deliveries");
  deliveries
    .command("list")
    .description("list the deliveries of an endpoint or of an event, newest first")
    .option("--endpoint <id>", "deliveries to this endpoint (whk_…)", "")
    .option("--event <id>", "deliveries of this event", "")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { endpoint: string; event: string; pageSize: string; pageToken: string; json?: boolean }) => {
      if (o.endpoint === "" && o.event === "") throw new UsageError("give --endpoint or --event");
      const res = await client().listDeliveries({ endpointId: o.endpoint, eventId: o.event, pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      ctx.printList(ListDeliveriesResponseSchema, res, deliveryColumns, !!o.json);
    });
  deliveries
    .command("get <id>")
    .description("show a delivery")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      ctx.print(DeliverySchema, (await client().getDelivery({ id })).delivery!, deliveryColumns, !!o.json);
    });
  deliveries
    .command("retry <id>")
    .description("make one attempt of a delivery now (recorded as manual) and show it")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      showAttempt(ctx, await client().retryDelivery({ id }), "manual attempt", !!o.json);
    });
  return deliveries;
}

/**
 * Prints an attempt and its delivery's status (both as JSON with `json`);
 * a failed attempt is also the exit code (CommandFailure attempt_failed),
 * since a script must see it there, not only in the output.
 */
export function showAttempt(
  ctx: CliContext,
  res: { attempt?: MessageShape<typeof DeliveryAttemptSchema>; delivery?: MessageShape<typeof DeliverySchema> },
  what: string,
  json: boolean,
): void {
  const attempt = toRestJson(DeliveryAttemptSchema, res.attempt!);
  const delivery = toRestJson(DeliverySchema, res.delivery!);
  if (json) {
    ctx.printJson({ attempt, delivery });
  } else {
    ctx.print(DeliveryAttemptSchema, res.attempt!, attemptColumns, false);
    ctx.say(`\ndelivery ${String(delivery.id)} is ${String(delivery.status)}`, false);
  }
  if (!res.attempt!.succeeded) {
    const answer = attempt.http_status === null ? `no answer (${String(attempt.error_kind)})` : `HTTP ${String(attempt.http_status)}`;
    throw new CommandFailure("attempt_failed", `the ${what} ${String(attempt.id)} failed: ${answer}`);
  }
}
