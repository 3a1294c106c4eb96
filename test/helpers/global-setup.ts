import type { TestProject } from "vitest/node";
import { buildCli, buildService } from "../../src/codegen/build-service.js";
import { startEmbeddedMongo } from "../../src/store/embedded-mongo.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the database every suite uses (each with its own database name). */
    mongoUri: string;
  }
}

/**
 * Builds the service (buildService: the tests that run it in its own
 * process run the build, as `npm start` does) and the msgsvc CLI (buildCli:
 * the tests run its bin, which runs that build), and starts the database for
 * the whole run: MONGODB_URI when given (for example a MongoDB 7 replica
 * set), else one embedded mongo-java-server with its memory backend, shared
 * by every suite (each uses a database of its own).
 */
export default async function setup(project: TestProject) {
  await buildService();
  await buildCli();
  if (process.env.MONGODB_URI) {
    project.provide("mongoUri", process.env.MONGODB_URI);
    return;
  }
  const db = await startEmbeddedMongo({ kind: "memory" });
  project.provide("mongoUri", db.uri);
  return () => db.stop();
}
