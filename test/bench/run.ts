import { rm } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { projectRoot, startEmbeddedFerretDb } from "../../src/store/embedded-ferretdb.js";
import { runFilesBench } from "./files-bench.js";
import { runMeBench } from "./me-bench.js";
import { runMessagesBench } from "./messages-bench.js";
import { runWebhookBench } from "./webhook-bench.js";

/*
 * `npm run bench [-- --seconds N --concurrency N --backlogs 10000,100000 --only me|messages|webhooks|files --file-mib N]`:
 * runs the benchmarks against MONGODB_URI, or a fresh embedded FerretDB, and
 * prints their tables.
 */
const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    concurrency: { type: "string", default: "50" },
    backlogs: { type: "string", default: "10000,100000" },
    only: { type: "string", default: "" },
    "file-mib": { type: "string", default: "64" },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);

const dataDir = path.join(".data", `bench-${process.pid}`);
const embedded = process.env.MONGODB_URI ? undefined : await startEmbeddedFerretDb(dataDir);
const mongodbUri = process.env.MONGODB_URI ?? (embedded?.uri as string);
const database = embedded ? "embedded FerretDB v1 (SQLite) behind the command gate" : "MONGODB_URI";
try {
  process.stdout.write(`Machine: ${(await import("node:os")).cpus().length} cores, Node ${process.version}; database: ${database}\n\n`);
  const run = (name: string) => values.only === "" || values.only === name;
  if (run("me")) process.stdout.write(`${await runMeBench({ mongodbUri, concurrency, seconds })}\n\n`);
  if (run("messages")) process.stdout.write(`${await runMessagesBench({ mongodbUri, concurrency: 10, callsPerWorker: 10 })}\n\n`);
  if (run("webhooks")) {
    const backlogs = values.backlogs.split(",").filter((b) => b !== "").map(Number);
    process.stdout.write(`${await runWebhookBench({ mongodbUri, seconds, backlogs })}\n`);
  }
  if (run("files")) process.stdout.write(`${await runFilesBench({ mongodbUri, sizeMiB: Number(values["file-mib"]) })}\n`);
} finally {
  await embedded?.stop();
  if (embedded) await rm(path.join(projectRoot, dataDir), { recursive: true, force: true });
}
