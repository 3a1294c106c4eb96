// An example webhook receiver, as your app would have one (README "Quick start" and "Verifying a delivery"):
// `node src/webhooks/examples/receiver.mjs [port]` listens on port 3000 (unless given) and answers every
// POST. With SIGNING_SECRET set (the whsec_… secret of the endpoint, or the one `msgsvc webhooks listen` prints), it
// verifies each delivery's Service-Signature over the raw body first and refuses a bad one with 400 and the reason;
// then it answers 204 and prints the event's type and id. Stop it with Ctrl-C.
import http from "node:http";
import { verifyWebhookSignature, WebhookSignatureError } from "messaging-service/webhooks/signature";

const port = Number(process.argv[2] ?? 3000);
const secret = process.env.SIGNING_SECRET;

http
  .createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk)).on("end", () => {
      const rawBody = Buffer.concat(chunks);
      if (secret) {
        try {
          verifyWebhookSignature(rawBody, req.headers["service-signature"], secret); // { toleranceSeconds: 300 }
        } catch (err) {
          if (!(err instanceof WebhookSignatureError)) throw err;
          console.log(`app: refused a delivery: ${err.reason}`);
          return res.writeHead(400).end(err.reason); // e.g. "signature_mismatch"
        }
      }
      let event;
      try {
        event = JSON.parse(rawBody.toString("utf8"));
      } catch {
        return res.writeHead(400).end("not JSON");
      }
      // Deduplicate on event.id (deliveries come at least once); order by event.data.occurred_at.
      console.log(`app: ${event.type} ${event.id}${secret ? " (signature verified)" : ""}`);
      res.writeHead(204).end();
    });
  })
  .listen(port, () => console.log(`app: example receiver at http://localhost:${port}/webhooks${secret ? "" : " (set SIGNING_SECRET to verify signatures)"}`));
