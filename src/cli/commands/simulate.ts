import { Command } from "commander";
import { SimulatorService } from "../../../gen/messaging/console/v1/simulator_pb.js";
import type { CliContext } from "../context.js";

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
  return simulate;
}
