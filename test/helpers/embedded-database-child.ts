import { startEmbeddedMongo } from "../../src/store/embedded-mongo.js";

/*
 * A process that starts the embedded database and prints one JSON line
 * `{ "uri": …, "pid": … }`, then waits to be killed: the parent the
 * embedded-database tests kill to see that the database does not outlive it.
 */
const db = await startEmbeddedMongo({ kind: "memory" });
process.stdout.write(`${JSON.stringify({ uri: db.uri, pid: db.pid })}\n`);
setInterval(() => {}, 60_000);
