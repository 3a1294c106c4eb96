import { SenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { projectRoot } from "../../src/shared/project-root.js";
import { TEST_CONSOLE_TOKEN, type TestService } from "./test-service.js";

/** Simulator and dispatch settings that compress seconds into milliseconds for tests. */
export const FAST_MESSAGING = {
  simulatorSentDelayMs: 5,
  simulatorDeliveredDelayMs: 40,
  simulatorReadDelayMs: 80,
  simulatorOutOfOrderPercent: 0,
  dispatchRetryBaseMs: 20,
  dispatchRetryMaxMs: 200,
};

/** Creates an active sender through the console API; returns its id. */
export async function createSender(t: TestService, workspaceId: string, phoneNumber = "4915100000001", whatsappPhoneNumberId = ""): Promise<string> {
  const { sender } = await t.console(SenderService).createSender({ workspaceId, phoneNumber, name: "Support", whatsappPhoneNumberId });
  return sender!.id;
}

/** Creates an active template through the console API; returns its id. */
export async function createTemplate(
  t: TestService,
  workspaceId: string,
  o: { name?: string; body?: string; flowId?: string; optional?: string[]; examples?: Record<string, string> } = {},
): Promise<string> {
  const { template } = await t.console(TemplateService).createTemplate({
    workspaceId,
    name: o.name ?? "verification_code",
    language: "en",
    body: o.body ?? "Hello {{name}}, your code is {{code}}",
    flowId: o.flowId ?? "",
    optionalVariables: o.optional ?? [],
    examples: o.examples ?? {},
  });
  return template!.id;
}

/** Starts the msgsvc bin against the test service's console (as the operator unless given a token), for commands that keep running. */
export function spawnMsgsvc(t: TestService, args: string[], token = TEST_CONSOLE_TOKEN): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ["src/cli/bin.mjs", ...args], {
    cwd: projectRoot,
    env: { ...process.env, CONSOLE_URL: t.consoleUrl, CONSOLE_TOKEN: token },
  });
}

/** Runs the msgsvc bin against the test service's console (as the operator unless given a token); resolves to its exit code and output. */
export function msgsvc(t: TestService, args: string[], token = TEST_CONSOLE_TOKEN): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnMsgsvc(t, args, token);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
