import path from "node:path";
import { fileURLToPath } from "node:url";

/** Root folder of the project (where package.json is); `.cache/` and the default `DATA_DIR` are below it. */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
