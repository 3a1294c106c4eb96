import { Command } from "commander";
import { DeliveryAttemptSchema, DeliverySchema, DeliveryService } from "../../../gen/messaging/console/v1/deliveries_pb.js";
import { toRestJson } from "../../gateway/rest-json.js";
import { UsageError, type CliContext } from "../context.js";
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
      const res = await client().listDeliveries({ endpointId: o.endpoint, eventId: o.event, pageSize: Number(o.pageSize), pageToken: o.pageToken });
      ctx.print(DeliverySchema, res.data, deliveryColumns, !!o.json);
      if (res.nextPageToken) ctx.say(`more: --page-token ${res.nextPageToken}`, !!o.json);
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
      const res = await client().retryDelivery({ id });
      if (o.json) {
        ctx.printJson({ attempt: toRestJson(DeliveryAttemptSchema, res.attempt!), delivery: toRestJson(DeliverySchema, res.delivery!) });
        return;
      }
      ctx.print(DeliveryAttemptSchema, res.attempt!, attemptColumns, false);
      ctx.say(`\ndelivery ${id} is ${toRestJson(DeliverySchema, res.delivery!).status}`, false);
    });
  return deliveries;
}
