import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { access, copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { projectRoot } from "../shared/project-root.js";

/*
 * The tools that generation and the client checks need beyond node_modules,
 * installed by the project itself into the ignored .cache/ folder, pinned
 * exactly, so that a fresh machine needs only Go, Python and the README's two
 * commands:
 * - Go plugins for buf (protoc-gen-go, protoc-gen-go-grpc), built through the
 *   Go module proxy with GOBIN=.cache/go-tools/bin;
 * - a Python virtual environment (.cache/python/venv-<hash>) with the pinned
 *   packages of python-requirements.txt from PyPI: grpcio-tools, whose
 *   bundled protoc writes gen/python, and the runtime the Python client
 *   checks import;
 * - the protos the contract imports beyond node_modules: protovalidate's
 *   buf/validate/validate.proto, from its Go module through the Go module
 *   proxy (checked against sum.golang.org), into .cache/proto/protovalidate
 *   (a buf module in buf.yaml).
 */

/** Go plugins buf runs for gen/go, by `go install` package path and exact version. */
export const GO_TOOLS = {
  "protoc-gen-go": "google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12",
  "protoc-gen-go-grpc": "google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2",
} as const;

/** Folder of the Go plugins (buf.gen.clients.yaml names them there). */
export const GO_TOOLS_BIN = path.join(projectRoot, ".cache", "go-tools", "bin");

const PYTHON_REQUIREMENTS = path.join(projectRoot, "src", "codegen", "python-requirements.txt");

/** What a finished command printed and how it ended. */
export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end, feeding `input` to its standard input.
 * Rejects only when the command cannot be started (for example ENOENT when
 * the program is not installed); a non-zero exit is in the result.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? projectRoot, env: options.env ?? process.env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

/**
 * Runs a command and resolves to its standard output.
 *
 * @throws Error naming the command, with its output, when it exits non-zero.
 */
export async function mustRun(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<string> {
  const result = await runCommand(command, args, options);
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed (exit ${result.code}):\n${result.stdout}${result.stderr}`);
  }
  return result.stdout;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

const TOOLCHAIN_PROBES = {
  go: ["go", ["version"]],
  python3: ["python3", ["--version"]],
  // ensurePythonVenv needs the venv module and pip's bootstrap (Debian ships them apart);
  // gen/python/messaging_rest needs Python 3.11 (typing.Self, enum.StrEnum).
  "python3-venv": ["python3", ["-c", "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11) and 'Python 3.11 or later is needed')"]],
} as const;

/**
 * Why a toolchain cannot be used here (for skipping checks with a printed
 * reason), or undefined when its probe command (for example `go version`) works.
 */
export async function missingToolchain(toolchain: keyof typeof TOOLCHAIN_PROBES): Promise<string | undefined> {
  const [command, args] = TOOLCHAIN_PROBES[toolchain];
  const result = await runCommand(command, args).catch((err: Error) => ({ code: -1, stdout: "", stderr: err.message }));
  return result.code === 0 ? undefined : `${toolchain} is not available (${result.stderr.trim() || `exit ${result.code}`})`;
}

/**
 * Installs the pinned Go plugins into GO_TOOLS_BIN unless the versions
 * recorded there already match GO_TOOLS.
 *
 * @throws Error when Go is missing or an install fails.
 */
export async function ensureGoTools(): Promise<void> {
  const stamp = path.join(GO_TOOLS_BIN, "versions.json");
  const wanted = JSON.stringify(GO_TOOLS);
  if ((await readFile(stamp, "utf8").catch(() => "")) === wanted) return;
  await mkdir(GO_TOOLS_BIN, { recursive: true });
  for (const pkg of Object.values(GO_TOOLS)) {
    await mustRun("go", ["install", pkg], { env: { ...process.env, GOBIN: GO_TOOLS_BIN } });
  }
  await writeFile(stamp, wanted);
}

/**
 * protovalidate's module and exact version: its buf/validate/validate.proto
 * defines the `(buf.validate.field)` rules of our protos. The version matches
 * the rules that @bufbuild/protovalidate (package.json) enforces.
 */
export const PROTOVALIDATE_MODULE = "github.com/bufbuild/protovalidate@v1.2.2";

/** Folder of the fetched protovalidate protos (buf.yaml names it as a module). */
export const PROTOVALIDATE_PROTO_DIR = path.join(projectRoot, ".cache", "proto", "protovalidate");

/**
 * Copies buf/validate/validate.proto of PROTOVALIDATE_MODULE into
 * PROTOVALIDATE_PROTO_DIR unless the version recorded there already matches.
 * `go mod download` fetches the module through the Go module proxy and checks
 * its hash against the checksum database.
 *
 * @throws Error when Go is missing or the download fails.
 */
export async function ensureProtovalidateProto(): Promise<void> {
  const stamp = path.join(PROTOVALIDATE_PROTO_DIR, "version.txt");
  if ((await readFile(stamp, "utf8").catch(() => "")) === PROTOVALIDATE_MODULE) return;
  const { Dir } = JSON.parse(await mustRun("go", ["mod", "download", "-json", PROTOVALIDATE_MODULE])) as { Dir: string };
  const target = path.join(PROTOVALIDATE_PROTO_DIR, "buf", "validate");
  await mkdir(target, { recursive: true });
  await rm(path.join(target, "validate.proto"), { force: true }); // the module cache's copies are read-only
  await copyFile(path.join(Dir, "proto", "protovalidate", "buf", "validate", "validate.proto"), path.join(target, "validate.proto"));
  await writeFile(stamp, PROTOVALIDATE_MODULE);
}

/**
 * Returns the Python interpreter of the project's virtual environment,
 * creating it first (python3 -m venv, then pip install of the pinned
 * python-requirements.txt) when the folder for the current requirements
 * does not exist yet. The folder name carries a hash of the requirements,
 * so a change of pins makes a new environment; it is built in a temporary
 * folder and renamed into place, so concurrent callers cannot see half of it.
 *
 * @throws Error when python3 or its venv module is missing, or pip fails.
 */
export async function ensurePythonVenv(): Promise<string> {
  const requirements = await readFile(PYTHON_REQUIREMENTS, "utf8");
  const hash = createHash("sha256").update(requirements).digest("hex").slice(0, 12);
  const venv = path.join(projectRoot, ".cache", "python", `venv-${hash}`);
  const python = path.join(venv, "bin", "python");
  if (await exists(python)) return python;

  const building = `${venv}.build-${process.pid}`;
  await rm(building, { recursive: true, force: true });
  await mkdir(path.dirname(venv), { recursive: true });
  try {
    await mustRun("python3", ["-m", "venv", building]);
    const pip = [path.join(building, "bin", "python"), "-m", "pip", "--disable-pip-version-check", "install", "--quiet"];
    await mustRun(pip[0] as string, [...pip.slice(1), "--requirement", PYTHON_REQUIREMENTS]);
    // Another process may have finished first; its environment is as good as ours.
    if (!(await exists(python))) await rename(building, venv);
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  return python;
}

/**
 * The Connect conformance suite (`npm run conformance`): its Go module and
 * exact version, whose `connectconformance` runner judges this service's
 * protocols and whose protos define the ConformanceService the test server
 * implements (test/conformance/).
 */
export const CONFORMANCE_MODULE = "connectrpc.com/conformance@v1.0.7";

/** Folder of the conformance runner and its protos. */
export const CONFORMANCE_DIR = path.join(projectRoot, ".cache", "conformance");

/**
 * Installs the pinned `connectconformance` runner (`go install` through the
 * Go module proxy, about two minutes the first time) and copies the suite's
 * protos into CONFORMANCE_DIR/proto, unless the version recorded there
 * already matches CONFORMANCE_MODULE. Resolves to the runner's path and the
 * proto folder.
 *
 * @throws Error when Go is missing or a download or build fails.
 */
export async function ensureConformanceSuite(): Promise<{ runner: string; protoDir: string }> {
  const runner = path.join(CONFORMANCE_DIR, "bin", "connectconformance");
  const protoDir = path.join(CONFORMANCE_DIR, "proto");
  const stamp = path.join(CONFORMANCE_DIR, "version.txt");
  if ((await readFile(stamp, "utf8").catch(() => "")) === CONFORMANCE_MODULE) return { runner, protoDir };
  const [module] = CONFORMANCE_MODULE.split("@") as [string];
  await mustRun("go", ["install", CONFORMANCE_MODULE.replace(module, `${module}/cmd/connectconformance`)], {
    env: { ...process.env, GOBIN: path.dirname(runner) },
  });
  const { Dir } = JSON.parse(await mustRun("go", ["mod", "download", "-json", CONFORMANCE_MODULE])) as { Dir: string };
  const folder = path.join("connectrpc", "conformance", "v1");
  await rm(protoDir, { recursive: true, force: true });
  await mkdir(path.join(protoDir, folder), { recursive: true });
  for (const file of await readdir(path.join(Dir, "proto", folder))) {
    // Read and written, not copied: the module cache's files are read-only, and a copy would be too.
    if (file.endsWith(".proto")) await writeFile(path.join(protoDir, folder, file), await readFile(path.join(Dir, "proto", folder, file)));
  }
  await writeFile(stamp, CONFORMANCE_MODULE);
  return { runner, protoDir };
}
