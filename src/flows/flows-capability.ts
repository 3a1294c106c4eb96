import { FlowResponseService as ConsoleFlowResponseService } from "../../gen/messaging/console/v1/flow_responses_pb.js";
import { SimulatorService } from "../../gen/messaging/console/v1/simulator_pb.js";
import { FlowResponseService } from "../../gen/messaging/v1/flow_responses_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import type { Inbound } from "../messages/inbound.js";
import type { MessageStore } from "../messages/message-store.js";
import type { NetworkAdapter } from "../network/network.js";
import type { Simulator } from "../network/simulator.js";
import { createFileFetcher } from "./file-fetch.js";
import { createFlowResponseConsoleService } from "./flow-response-console-service.js";
import { createFlowResponseService } from "./flow-response-service.js";
import { createFlowSimulatorService } from "./flow-simulator-service.js";
import { createFlowIntake } from "./intake.js";
import { newId } from "../shared/ids.js";

/** Name of the flows sweep job. */
export const FLOWS_SWEEP_JOB = "flows.sweep";

/**
 * Forms (README §Forms): form submissions from any network adapter become
 * flow responses (frs_<uuid>) traced to the message that carried the form;
 * their files are fetched from the network into GridFS (a leased queue of the
 * responses, begun by the process that recorded them; each worker claims
 * what waits with the process's queue claims), which then fires
 * flow.completed; the public FlowResponseService reads them
 * (flow_responses:read), and the console's for the workspace's people; the
 * simulator's console methods upload media and submit forms. The sweep
 * flows.sweep (every MESSAGES_SWEEP_INTERVAL_MS) deletes simulated media older
 * than 24 hours.
 */
export function createFlowsCapability(
  platform: Platform,
  deps: { messages: MessageStore; inbound: Inbound; network: NetworkAdapter; simulator: Simulator | undefined },
): Capability {
  const { config, clock, logger, scheduler, events } = platform;
  const { flowResponses: responses, flowFiles: files } = platform.stores;
  const owner = newId();
  const fetcher = createFileFetcher({
    responses,
    files,
    network: deps.network,
    events,
    clock,
    logger,
    owner,
    claimIntervalMs: config.queueClaimIntervalMs,
    options: {
      maxBytes: config.flowFileMaxBytes,
      allowedTypes: config.flowFileAllowedTypes,
      maxAttempts: config.flowFileFetchMaxAttempts,
      retryBaseMs: config.flowFileFetchRetryBaseMs,
    },
  });
  deps.inbound.onInbound("flow_response", createFlowIntake({ responses, messages: deps.messages, fetcher, clock }));
  const sweep = async () => {
    const media = (await deps.simulator?.media.prune()) ?? 0;
    if (media > 0) logger.info({ media }, "flows sweep: simulated media deleted");
  };
  return {
    name: "flows",
    publicServices: [registerService(FlowResponseService, createFlowResponseService({ responses, files }))],
    consoleServices: [
      registerService(SimulatorService, createFlowSimulatorService({ simulator: deps.simulator, messages: deps.messages, responses })),
      registerService(ConsoleFlowResponseService, createFlowResponseConsoleService({ responses, files, workspaces: platform.workspaces })),
    ],
    jobs: [{ name: FLOWS_SWEEP_JOB, concurrency: 1, run: sweep }],
    schedules: [{ job: FLOWS_SWEEP_JOB, everyMs: config.messagesSweepIntervalMs }],
    async ensureIndexes() {
      await responses.ensureIndexes();
    },
    async start() {
      if (config.role === "api") return;
      await sweep().catch((err: unknown) => logger.error({ err }, "flows sweep at start failed"));
      // The one-job-per-fetch of earlier releases: their responses are queued now (FlowResponseStore.ensureIndexes).
      await scheduler.agenda.cancel({ name: "flows.fetch_files" }).catch((err: unknown) => logger.warn({ err }, "removing earlier releases' fetch jobs failed"));
      platform.queueClaims.add(() => fetcher.drain());
      fetcher.start();
    },
    async stop() {
      await fetcher.stop();
    },
  };
}
