import { execFile } from "node:child_process";
import { access } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);
const CHROMIUM = "/usr/bin/chromium";

/**
 * Path of Debian's chromium, installing the package first when it is missing
 * and this process may (root with apt-get): the browser test needs it, and a
 * fresh machine has only the README's commands. Resolves to undefined with a
 * reason when it cannot be had.
 */
export async function ensureChromium(): Promise<{ path?: string; reason?: string }> {
  const present = () => access(CHROMIUM).then(() => true, () => false);
  if (await present()) return { path: CHROMIUM };
  if (process.platform !== "linux" || process.getuid?.() !== 0) {
    return { reason: `${CHROMIUM} is missing; install Debian's chromium package (apt-get install chromium) to run the browser test` };
  }
  try {
    process.stderr.write("Installing Debian's chromium for the browser test (once)…\n");
    await run("apt-get", ["update"], { timeout: 300_000 });
    await run("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], {
      timeout: 600_000,
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  } catch (err) {
    return { reason: `installing chromium failed: ${(err as Error).message}` };
  }
  return (await present()) ? { path: CHROMIUM } : { reason: "chromium is still missing after apt-get install" };
}

/** Flags for headless Debian chromium on a machine with a closed network. */
export const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
