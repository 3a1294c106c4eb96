import { DEFAULT_THROUGHPUT_MPS, type SenderStore } from "../senders/sender-store.js";
import { parseBody } from "../templates/template-body.js";
import type { TemplateStore } from "../templates/template-store.js";

/** The demo sender's number (a reserved-looking US number) and template, as printed by `npm start`. */
export const DEMO_SENDER_PHONE = "15550001234";
const DEMO_TEMPLATE = { name: "verification_code", language: "en", body: "Hello {{name}}, your code is {{code}}" };
/** The demo form template: it carries a form (flow), so its messages can be submitted with files (README §Forms). */
const DEMO_FORM_TEMPLATE = { name: "signup_form", language: "en", body: "Hello {{name}}, please fill in the sign-up form", flowId: "1234567890" };

/**
 * Makes sure the demo workspace has an active sender, template and form
 * template (created once, reused on later starts) so the printed examples
 * can send a message and a form.
 */
export async function ensureDemoSenderAndTemplate(
  stores: { senders: SenderStore; templates: TemplateStore },
  workspaceId: string,
): Promise<{ senderId: string; templateId: string; formTemplateId: string }> {
  const { senders, templates } = stores;
  const sender =
    (await senders.findActiveByPhone(workspaceId, DEMO_SENDER_PHONE)) ??
    (await senders.create({ workspaceId, phoneNumber: DEMO_SENDER_PHONE, name: "Demo sender", whatsappPhoneNumberId: null, throughputMps: DEFAULT_THROUGHPUT_MPS, throughputSource: "default" }));
  const template =
    (await templates.findActive(workspaceId, DEMO_TEMPLATE.name, DEMO_TEMPLATE.language)) ??
    (await templates.create({
      workspace_id: workspaceId,
      ...DEMO_TEMPLATE,
      variables: parseBody(DEMO_TEMPLATE.body).variables.map((name) => ({ name, required: true, example: name === "name" ? "Ada" : "123456" })),
      flow_id: null,
    }));
  const form =
    (await templates.findActive(workspaceId, DEMO_FORM_TEMPLATE.name, DEMO_FORM_TEMPLATE.language)) ??
    (await templates.create({
      workspace_id: workspaceId,
      name: DEMO_FORM_TEMPLATE.name,
      language: DEMO_FORM_TEMPLATE.language,
      body: DEMO_FORM_TEMPLATE.body,
      variables: [{ name: "name", required: true, example: "Ada" }],
      flow_id: DEMO_FORM_TEMPLATE.flowId,
    }));
  return { senderId: sender._id, templateId: template._id, formTemplateId: form._id };
}
