#!/usr/bin/env node
// Entry of the `msgsvc` bin: runs the CLI's build, one bundled ES module (.cache/build/cli/msgsvc.mjs), compiled once
// by `npm install` (and `npm start`) rather than transpiled at every call. When the build is missing, or a file it was
// built from is newer than it (an edit, a checkout, a new package), it is built again first, through tsx
// (src/codegen/build-service.ts, buildCli).
import { readFileSync, statSync } from "node:fs";

const root = new URL("../../", import.meta.url);
const bundle = new URL(".cache/build/cli/msgsvc.mjs", root);

/** Whether the build exists and no file it was built from changed since. */
function fresh() {
  try {
    const built = statSync(bundle).mtimeMs;
    const inputs = JSON.parse(readFileSync(new URL(".cache/build/cli/inputs.json", root), "utf8"));
    return inputs.every((file) => statSync(new URL(file, root)).mtimeMs <= built);
  } catch {
    return false;
  }
}

if (!fresh()) {
  const { register } = await import("tsx/esm/api");
  register();
  const { buildCli } = await import("../codegen/build-service.ts");
  await buildCli();
}
const { runCli } = await import(bundle.href);
process.exitCode = await runCli(process.argv.slice(2));
