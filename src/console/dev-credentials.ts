import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";

/**
 * What local development keeps across restarts of `npm start` on the
 * embedded database, as Stripe's test keys stay put: the demo API key's
 * secret, the console token and the bootstrap admin's password. Never used
 * with MONGODB_URI (production), where keys are made with the console.
 */
export interface DevCredentials {
  /** The demo workspace's API key secret (`sk_…`); empty until the first start made the key. */
  apiKeySecret: string;
  /** CONSOLE_TOKEN when the environment does not set it. */
  consoleToken: string;
  /** Password of `admin@localhost` when CONSOLE_ADMIN_EMAIL is not set. */
  adminPassword: string;
}

const FileSchema = z.object({ api_key_secret: z.string(), console_token: z.string().min(24), admin_password: z.string().min(12) });

/**
 * Reads the development credentials from `file` (JSON, owner-only), making
 * them on the first start.
 *
 * @throws Error naming the file when it exists but is not such a file (delete it to start over).
 */
export async function loadDevCredentials(file: string): Promise<DevCredentials> {
  let text: string | undefined;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  if (text !== undefined) {
    const parsed = FileSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`${file} does not hold development credentials (delete it to make new ones)`);
    return { apiKeySecret: parsed.data.api_key_secret, consoleToken: parsed.data.console_token, adminPassword: parsed.data.admin_password };
  }
  const made: DevCredentials = { apiKeySecret: "", consoleToken: randomBytes(24).toString("base64url"), adminPassword: randomBytes(12).toString("base64url") };
  await saveDevCredentials(file, made);
  return made;
}

/** Writes the development credentials to `file`, readable and writable by the owner only (mode 0600). */
export async function saveDevCredentials(file: string, credentials: DevCredentials): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const json = { api_key_secret: credentials.apiKeySecret, console_token: credentials.consoleToken, admin_password: credentials.adminPassword };
  await writeFile(file, `${JSON.stringify(json, null, 2)}\n`, { mode: 0o600 });
}
