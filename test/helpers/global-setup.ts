import { rm } from "node:fs/promises";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { projectRoot, startEmbeddedFerretDb } from "../../src/store/embedded-ferretdb.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the database every suite uses (each with its own database name). */
    mongoUri: string;
  }
}

/**
 * Starts the database for the whole run: MONGODB_URI when given (for
 * example a real MongoDB 7 replica set), else the embedded FerretDB in a
 * fresh folder that is removed afterwards.
 */
export default async function setup(project: TestProject) {
  if (process.env.MONGODB_URI) {
    project.provide("mongoUri", process.env.MONGODB_URI);
    return;
  }
  const dataDir = path.join(".data", `test-${process.pid}`);
  const db = await startEmbeddedFerretDb(dataDir);
  project.provide("mongoUri", db.uri);
  return async () => {
    await db.stop();
    await rm(path.join(projectRoot, dataDir), { recursive: true, force: true });
  };
}
