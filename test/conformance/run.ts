import { spawn } from "node:child_process";
import path from "node:path";
import { CONFORMANCE_DIR, ensureConformanceSuite, mustRun } from "../../src/codegen/toolchain.js";
import { projectRoot } from "../../src/shared/project-root.js";

/*
 * `npm run conformance [-- runner flags]`: the Connect conformance suite
 * (connectrpc.com/conformance, pinned in src/codegen/toolchain.ts) judges the
 * protocols of this service's serving stack. Its `connectconformance` runner
 * starts test/conformance/server.ts for each configuration it needs and
 * calls it with its reference client over Connect (JSON and binary, GET
 * included), gRPC and gRPC-Web, HTTP/1.1 and HTTP/2, with and without
 * compression, every stream type, errors, metadata, deadlines and message
 * limits (test/conformance/config.yaml says what the stack supports). Cases
 * in known-failing.txt must fail; every other case must pass. Prints the
 * runner's summary and exits with its status. Extra arguments go to the
 * runner (for example `-- --run '**​/unary/**' -v`).
 */

const here = path.join(projectRoot, "test", "conformance");
const { runner, protoDir } = await ensureConformanceSuite();
const descriptors = path.join(CONFORMANCE_DIR, "descriptors.binpb");
await mustRun(path.join(projectRoot, "node_modules", ".bin", "buf"), ["build", protoDir, "--as-file-descriptor-set", "-o", descriptors]);

const args = [
  "--mode",
  "server",
  "--conf",
  path.join(here, "config.yaml"),
  "--known-failing",
  `@${path.join(here, "known-failing.txt")}`,
  ...process.argv.slice(2),
  "--",
  process.execPath,
  "--import",
  "tsx",
  path.join(here, "server.ts"),
];
const child = spawn(runner, args, { stdio: "inherit", env: { ...process.env, CONFORMANCE_DESCRIPTORS: descriptors } });
child.on("close", (code) => process.exit(code ?? 1));
