import { buildCli, buildService } from "./build-service.js";
import { ensureProtovalidateProto } from "./toolchain.js";

/*
 * `npm install` runs this (the `prepare` script), so that a fresh clone is
 * ready for what the README's first commands do:
 * - the protos the contract imports beyond node_modules (protovalidate's
 *   buf/validate/validate.proto, through the Go module proxy into
 *   .cache/proto: never copied into the repository), which
 *   `npx buf curl --schema .` reads; without Go it says what to do and goes
 *   on: the service and its tests need none of it;
 * - the service's build and the msgsvc CLI's bundle (.cache/build), so that
 *   the first `npx msgsvc` answers as fast as the next.
 */
try {
  await ensureProtovalidateProto();
} catch (err) {
  const reason = (err as NodeJS.ErrnoException).code === "ENOENT" ? "Go is not installed" : (err as Error).message.split("\n", 1)[0];
  process.stderr.write(
    `note: protovalidate's validate.proto was not fetched (${reason}); \`npx buf curl --schema .\` and \`npm run generate\` need it: install Go and run \`npm run fetch-protos\`\n`,
  );
}
await buildService();
await buildCli();
