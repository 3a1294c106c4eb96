import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Root folder of the project: the nearest folder above this module that
 * holds package.json, whether the module runs from its TypeScript source
 * (src/shared/) or from the service's build (.cache/build/src/shared/,
 * README "Development"). `.cache/` and the default `DATA_DIR` are below it.
 */
export const projectRoot = ((): string => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, "package.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
})();
