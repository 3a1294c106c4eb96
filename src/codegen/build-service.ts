import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
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

/** The msgsvc CLI's build: src/cli/msgsvc.ts and everything it imports, node_modules included, in one file. */
export const CLI_BUNDLE = path.join(BUILD_DIR, "cli", "msgsvc.mjs");

/** The files CLI_BUNDLE was built from (paths from the project root), one JSON array: the bin rebuilds when one is newer. */
export const CLI_INPUTS = path.join(BUILD_DIR, "cli", "inputs.json");

/**
 * Bundles the msgsvc CLI (src/cli/msgsvc.ts, exporting runCli) with esbuild
 * into CLI_BUNDLE, an ES module holding it and the packages it uses, with a
 * chunk per group of commands beside it in chunks/ (named by their content's
 * hash), and lists the files it was built from in CLI_INPUTS. Each file is
 * written beside its place and renamed into it, the entry last, so a CLI
 * started meanwhile reads the old build or the new one, never half of one.
 * About 0.3 s.
 *
 * Why: `npx msgsvc …` ran the TypeScript through tsx, which transpiled every
 * module it loads at every call (1.8 to 2 s a call); the bundle is compiled
 * once and loads as one file (README "Console and CLI": the measured times).
 * src/cli/bin.mjs runs it, building it first when it is missing or stale.
 *
 * @throws Error with esbuild's messages when a file cannot be built.
 */
export async function buildCli(): Promise<string> {
  const result = await build({
    entryPoints: ["src/cli/msgsvc.ts"],
    absWorkingDir: projectRoot,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Packages written as CommonJS call require(): give the module one.
    banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
    // Each group of commands in a chunk of its own, loaded when a call names it (src/cli/msgsvc.ts).
    splitting: true,
    outdir: path.dirname(CLI_BUNDLE),
    entryNames: "[name]",
    chunkNames: "chunks/[name]-[hash]",
    outExtension: { ".js": ".mjs" },
    write: false,
    metafile: true,
    logLevel: "warning",
  });
  await mkdir(path.join(path.dirname(CLI_BUNDLE), "chunks"), { recursive: true });
  const place = async (file: string, contents: string | Uint8Array) => {
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, contents);
    await rename(temp, file);
  };
  const outputs = [...result.outputFiles].sort((a, b) => Number(a.path === CLI_BUNDLE) - Number(b.path === CLI_BUNDLE));
  for (const output of outputs) await place(output.path, output.contents);
  await place(CLI_INPUTS, JSON.stringify(Object.keys(result.metafile.inputs)));
  // Chunks of earlier builds (their names carry their content's hash) go once the new entry is in place.
  const chunks = path.join(path.dirname(CLI_BUNDLE), "chunks");
  const current = new Set(outputs.map((o) => path.basename(o.path)));
  for (const name of await readdir(chunks)) if (!current.has(name) && !name.endsWith(".tmp")) await rm(path.join(chunks, name), { force: true });
  return CLI_BUNDLE;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await buildService();
  await buildCli();
}
