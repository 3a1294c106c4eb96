#!/usr/bin/env node
// Entry of the `msgsvc` bin: runs the TypeScript CLI through tsx.
import { register } from "tsx/esm/api";

register();
const { runCli } = await import("./msgsvc.ts");
process.exitCode = await runCli(process.argv.slice(2));
