import { mkdir, readFile, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import path from "node:path";

/**
 * The key that encrypts webhook signing secrets when WEBHOOK_SECRET_KEY is
 * not set and the service runs on its embedded database (`npm start`): kept
 * in `file` (64 hex digits, readable by the owner only) next to the data it
 * protects, and made on the first start, so that secrets stay usable across
 * restarts. With MONGODB_URI the key must come from WEBHOOK_SECRET_KEY (see
 * main.ts): a file on one machine would not follow the database.
 *
 * @throws Error when the file exists but does not hold a key.
 */
export async function loadOrCreateSecretKey(file: string): Promise<Buffer> {
  try {
    const text = (await readFile(file, "utf8")).trim();
    if (!/^[0-9a-f]{64}$/.test(text)) throw new Error(`${file} does not hold a webhook secret key (64 hex digits)`);
    return Buffer.from(text, "hex");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const key = randomBytes(32);
  await mkdir(path.dirname(file), { recursive: true });
  // "wx": a concurrent first start keeps the file the other one wrote.
  await writeFile(file, `${key.toString("hex")}\n`, { mode: 0o600, flag: "wx" }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== "EEXIST") throw err;
  });
  return Buffer.from((await readFile(file, "utf8")).trim(), "hex");
}
