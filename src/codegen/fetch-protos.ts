import { ensureProtovalidateProto } from "./toolchain.js";

/*
 * `npm run fetch-protos` (run by `npm run lint` and `npm run generate`): the
 * protos buf needs beyond this repository and node_modules, into .cache/proto
 * (see ensureProtovalidateProto).
 */
await ensureProtovalidateProto();
