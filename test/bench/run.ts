import { rm } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { projectRoot } from "../../src/shared/project-root.js";
import { buildService } from "../../src/codegen/build-service.js";
import { startEmbeddedMongo } from "../../src/store/embedded-mongo.js";
import { runBatchBench } from "./batch-bench.js";
import { runCliBench } from "./cli-bench.js";
import { runFilesBench } from "./files-bench.js";
import { runMeBench } from "./me-bench.js";
import { runMessagesBench } from "./messages-bench.js";
import { runPacingBench } from "./pacing-bench.js";
import { runScheduledBench } from "./scheduled-bench.js";
import { runStatsBench } from "./stats-bench.js";
import { runWebhookBench } from "./webhook-bench.js";

/*
 * `npm run bench [-- --seconds N --concurrency N --backlogs 10000,100000 --only me|messages|batch|stats|pacing|scheduled|webhooks|files|cli --file-mib N --cli-runs N --stats-sizes 3000,100000 --pacing-scale 1 --pacing-campaigns ten,upgraded --backend h2|memory --cpu-prof DIR]`:
 * runs the benchmarks against MONGODB_URI, or a fresh embedded mongo-java-server
 * (the H2 file backend `npm start` uses, 100 ms commit interval; or its memory
 * backend, as `npm test` uses), and prints their tables. With --cpu-prof, each
 * service process writes a V8 CPU profile (.cpuprofile) into DIR when it stops.
 */
const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    concurrency: { type: "string", default: "50" },
    backlogs: { type: "string", default: "10000,100000" },
    only: { type: "string", default: "" },
    "file-mib": { type: "string", default: "64" },
    "cli-runs": { type: "string", default: "20" },
    "stats-sizes": { type: "string", default: "3000,100000" },
    "pacing-scale": { type: "string", default: "1" },
    "pacing-campaigns": { type: "string", default: "" },
    backend: { type: "string", default: "h2" },
    "cpu-prof": { type: "string" },
  },
});
if (values["cpu-prof"]) process.env.SERVICE_CPU_PROF_DIR = path.resolve(values["cpu-prof"]);
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);

const dataDir = path.join(".data", `bench-${process.pid}`);
if (values.backend !== "h2" && values.backend !== "memory") throw new Error("--backend: must be h2 or memory");
// The service runs as `npm start` runs it, from the build; so do the bench's own processes (benchProcessEntry).
await buildService(["test/bench/*.ts"]);
const embedded = process.env.MONGODB_URI
  ? undefined
  : await startEmbeddedMongo(
      values.backend === "h2" ? { kind: "h2", file: path.join(dataDir, "database.mv"), commitIntervalMs: 100 } : { kind: "memory" },
    );
const mongodbUri = process.env.MONGODB_URI ?? (embedded?.uri as string);
const database = embedded ? `embedded mongo-java-server (${values.backend} backend)` : "MONGODB_URI";
try {
  process.stdout.write(`Machine: ${(await import("node:os")).cpus().length} cores, Node ${process.version}; database: ${database}\n\n`);
  const run = (name: string) => values.only === "" || values.only === name;
  if (run("me")) process.stdout.write(`${await runMeBench({ mongodbUri, concurrency, seconds })}\n\n`);
  if (run("messages")) process.stdout.write(`${await runMessagesBench({ mongodbUri, databasePid: embedded?.pid, concurrency: 32, callsPerWorker: 100 })}\n\n`);
  if (run("batch")) process.stdout.write(`${await runBatchBench({ mongodbUri })}\n\n`);
  if (run("pacing")) process.stdout.write(`${await runPacingBench({ mongodbUri, scale: Number(values["pacing-scale"]), campaigns: values["pacing-campaigns"] })}\n\n`);
  if (run("scheduled")) process.stdout.write(`${await runScheduledBench({ mongodbUri, scale: Number(values["pacing-scale"]) })}\n\n`);
  if (run("stats")) process.stdout.write(`${await runStatsBench({ mongodbUri, sizes: values["stats-sizes"].split(",").map(Number), calls: 100 })}\n\n`);
  if (run("webhooks")) {
    const backlogs = values.backlogs.split(",").filter((b) => b !== "").map(Number);
    process.stdout.write(`${await runWebhookBench({ mongodbUri, seconds, backlogs })}\n`);
  }
  if (run("files")) process.stdout.write(`${await runFilesBench({ mongodbUri, sizeMiB: Number(values["file-mib"]) })}\n`);
  if (run("cli")) process.stdout.write(`${await runCliBench({ mongodbUri, runs: Number(values["cli-runs"]) })}\n`);
} finally {
  await embedded?.stop();
  if (embedded) await rm(path.join(projectRoot, dataDir), { recursive: true, force: true });
}
