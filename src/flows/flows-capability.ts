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
import { createFlowFileStore } from "./flow-files.js";
import { createFlowResponseConsoleService } from "./flow-response-console-service.js";
import { createFlowResponseService } from "./flow-response-service.js";
import { createFlowResponseStore } from "./flow-response-store.js";
import { createFlowSimulatorService } from "./flow-simulator-service.js";
import { createFlowIntake } from "./intake.js";

/** Name of the flows recovery sweep job. */
export const FLOWS_SWEEP_JOB = "flows.sweep";

/**
 * Forms (README §Forms): form submissions from any network adapter become
 * flow responses (frs_<uuid>) traced to the message that carried the form;
 * their files are fetched from the network into GridFS by the
 * flows.fetch_files job, which then fires flow.completed; the public
 * FlowResponseService reads them (flow_responses:read), and the console's
 * for the workspace's people; the simulator's
 * console methods upload media and submit forms. The sweep flows.sweep (every
 * MESSAGES_SWEEP_INTERVAL_MS, and once when a worker starts) re-schedules
 * fetches whose job was lost or whose worker stopped, and deletes simulated
 * media older than 24 hours.
 */
export function createFlowsCapability(
  platform: Platform,
  deps: { messages: MessageStore; inbound: Inbound; network: NetworkAdapter; simulator: Simulator | undefined },
): Capability {
  const { db, config, clock, logger, scheduler, events } = platform;
  const responses = createFlowResponseStore(db);
  const files = createFlowFileStore(db);
  const fetcher = createFileFetcher({
    responses: responses.collection,
    jobs: db.collection("jobs"),
    files,
    network: deps.network,
    events,
    scheduler,
    clock,
    logger,
    options: {
      maxBytes: config.flowFileMaxBytes,
      allowedTypes: config.flowFileAllowedTypes,
      maxAttempts: config.flowFileFetchMaxAttempts,
      retryBaseMs: config.flowFileFetchRetryBaseMs,
    },
  });
  deps.inbound.onInbound("flow_response", createFlowIntake({ responses: responses.collection, messages: deps.messages.collection, fetcher, clock }));
  const sweep = async () => {
    const rescheduled = await fetcher.recover();
    const media = (await deps.simulator?.media.prune()) ?? 0;
    if (rescheduled + media > 0) logger.info({ rescheduled, media }, "flows sweep: recovered work");
  };
  return {
    name: "flows",
    publicServices: [registerService(FlowResponseService, createFlowResponseService({ responses, files }))],
    consoleServices: [
      registerService(SimulatorService, createFlowSimulatorService({ simulator: deps.simulator, messages: deps.messages, responses })),
      registerService(ConsoleFlowResponseService, createFlowResponseConsoleService({ responses, files, workspaces: platform.workspaces })),
    ],
    jobs: [fetcher.job as never, { name: FLOWS_SWEEP_JOB, concurrency: 1, run: sweep }],
    schedules: [{ job: FLOWS_SWEEP_JOB, everyMs: config.messagesSweepIntervalMs }],
    async ensureIndexes() {
      await responses.ensureIndexes();
      await deps.messages.collection.createIndex({ flow_token: 1, to: 1 });
    },
    async start() {
      if (config.role !== "api") await sweep().catch((err: unknown) => logger.error({ err }, "flows sweep at start failed"));
    },
    async stop() {
      await fetcher.stop();
    },
  };
}
