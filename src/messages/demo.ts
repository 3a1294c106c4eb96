import type { Db } from "mongodb";
import { createSenderStore } from "../senders/sender-store.js";
import type { Clock } from "../shared/clock.js";
import { parseBody } from "../templates/template-body.js";
import { createTemplateStore } from "../templates/template-store.js";

/** The demo sender's number (a reserved-looking US number) and template, as printed by `npm start`. */
export const DEMO_SENDER_PHONE = "15550001234";
const DEMO_TEMPLATE = { name: "verification_code", language: "en", body: "Hello {{name}}, your code is {{code}}" };

/**
 * Makes sure the demo workspace has an active sender and template (created
 * once, reused on later starts) so the printed examples can send a message.
 */
export async function ensureDemoSenderAndTemplate(db: Db, clock: Clock, workspaceId: string): Promise<{ senderId: string; templateId: string }> {
  const senders = createSenderStore(db, clock);
  const templates = createTemplateStore(db, clock);
  const sender =
    (await senders.findActiveByPhone(workspaceId, DEMO_SENDER_PHONE)) ??
    (await senders.create({ workspaceId, phoneNumber: DEMO_SENDER_PHONE, name: "Demo sender", whatsappPhoneNumberId: null }));
  const template =
    (await templates.findActive(workspaceId, DEMO_TEMPLATE.name, DEMO_TEMPLATE.language)) ??
    (await templates.create({
      workspace_id: workspaceId,
      ...DEMO_TEMPLATE,
      variables: parseBody(DEMO_TEMPLATE.body).variables.map((name) => ({ name, required: true, example: name === "name" ? "Ada" : "123456" })),
      flow_id: null,
    }));
  return { senderId: sender._id, templateId: template._id };
}
