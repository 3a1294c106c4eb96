import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { projectRoot } from "../shared/project-root.js";

/** Folder of the service's build: the JavaScript of src/ and gen/, in the same layout (gitignored). */
export const BUILD_DIR = path.join(projectRoot, ".cache", "build");

/** The service's entry point in the build (what `npm start` runs). */
export const SERVICE_ENTRY = path.join(BUILD_DIR, "src", "main.js");

/**
 * Transpiles every TypeScript file of src/ and gen/ (and the one
 * JavaScript module among them) to JavaScript under BUILD_DIR, file by file
 * with esbuild: no bundling, imports stay as written (`.js` specifiers
 * included) and packages load from node_modules; about a second. Types are
 * checked by `npm run lint` (tsc), not here. Resolves to SERVICE_ENTRY.
 *
 * @param more further files (globs, from the project root) built the same way into the same layout: the
 *   bench's processes (`test/bench/*.ts`), so that they run as the service does.
 *
 * Why: the service runs as plain JavaScript, not through tsx's loader, whose
 * hooks thread (a second V8 isolate, with the sources it transformed) held
 * about 30 MiB of an idle process and about 50 MiB of the service under the
 * send bench (README "Development").
 *
 * @throws Error with esbuild's messages when a file cannot be transpiled.
 */
export async function buildService(more: string[] = []): Promise<string> {
  await build({
    // The modules the service imports: TypeScript, and the JavaScript kept as it is (src/webhooks/signature.js).
    entryPoints: ["src/**/*.ts", "gen/**/*.ts", "src/webhooks/signature.js", ...more],
    absWorkingDir: projectRoot,
    outbase: ".",
    outdir: BUILD_DIR,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
  });
  return SERVICE_ENTRY;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await buildService();
