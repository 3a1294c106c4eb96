import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { CHROMIUM_ARGS, ensureChromium } from "./helpers/chromium.js";
import { verifyWebhookSignature } from "../src/webhooks/signature.js";
import { projectRoot } from "../src/shared/project-root.js";
import { rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING, msgsvc } from "./helpers/messaging.js";
import { answerOk, answerStatus, startReceiver, type Receiver } from "./helpers/receivers.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/**
 * Run in the page: its width against the viewport's, text nodes that read "null", "undefined" or
 * "[object …]" (with where they are), and error alerts shown.
 */
const LAYOUT_CHECK = `(() => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const stray = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (/^(null|undefined)$|\\[object \\w+\\]/.test(n.textContent.trim())) stray.push(n.textContent + " in " + n.parentElement.outerHTML.slice(0, 200));
  }
  const root = document.documentElement;
  return { scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, stray, alerts: [...document.querySelectorAll("[role=alert]")].map((a) => a.textContent) };
})()`;

const execFileAsync = promisify(execFile);
const ADMIN = { email: "web-admin@example.com", password: "web-console-password-1" };
/** Where the layout test keeps a screenshot of every page at each width (ignored by git, under .cache). */
const SCREENSHOTS = path.join(projectRoot, ".cache", "screenshots", "web-console");
const chromiumPath = await ensureChromium();
if (!chromiumPath.path) process.stderr.write(`Skipping the browser test: ${chromiumPath.reason}\n`);

describe.skipIf(!chromiumPath.path)("web console in a real browser", () => {
  let t: TestService;
  let browser: Browser;
  let page: Page;
  let workspaceId: string;
  let receiver: Receiver;
  /** Errors the page logged or threw (none expected). */
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    t = await createTestService({ config: {
        ...FAST_MESSAGING,
        consoleAdminEmail: ADMIN.email,
        consoleAdminPassword: ADMIN.password,
        webhookAllowHttpLoopback: true,
        webhookAllowPrivateTargets: true,
        webhookRetrySchedule: [0, 100, 100, 100, 100, 100, 100],
        jobPollIntervalMs: 100,
      },
    });
    receiver = await startReceiver(answerStatus(500));
    workspaceId = await t.createWorkspace("Browser workspace", 42);
    browser = await chromium.launch({ executablePath: chromiumPath.path, args: CHROMIUM_ARGS });
    const context = await browser.newContext();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: t.consoleUrl });
    page = await context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    page.on("pageerror", (err) => consoleErrors.push(err.message));
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await receiver?.close();
  });

  it("signs in, creates a key, uses it, and shows its refused request grouped by error", async () => {
    await page.goto(t.consoleUrl);
    await page.fill("#email", ADMIN.email);
    await page.fill("#password", ADMIN.password);
    await page.click("button[type=submit]");
    await page.selectOption("#workspace", workspaceId);
    await expect.poll(() => page.textContent("[data-test=credit-balance]")).toBe("42");
    expect(await page.textContent("[data-test=messaging-limit]")).toBe("unlimited");
    // With a messaging limit, the overview shows how much of it is used.
    const limited = await rest(t.consoleUrl, "PATCH", `/console/v1/workspaces/${workspaceId}`, { key: TEST_CONSOLE_TOKEN, body: { messaging_limit: "tier_10k" } });
    expect(limited.status).toBe(200);
    await page.reload();
    await expect.poll(() => page.textContent("[data-test=messaging-limit]")).toBe("0 of 10,000");

    // Create a key that may read templates only; its secret is shown once, with a copy button.
    await page.click("nav a[href='#keys']");
    await page.fill("#key-name", "browser key");
    await page.check("input[value='templates:read']");
    await page.fill("#key-rate", "50");
    await page.click("form button[type=submit]");
    const secret = (await page.textContent("[data-test=secret]"))?.trim() ?? "";
    expect(secret).toMatch(/^sk_[0-9A-Za-z]{46}$/);
    await page.click(".secret button");
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(secret);
    await expect.poll(() => page.locator("tr[data-key-id]").count()).toBe(1);

    // Use it against the public API: allowed once, refused without the scope twice.
    const me = await rest(t.publicUrl, "GET", "/v1/me", { key: secret });
    expect(me.json.key).toMatchObject({ name: "browser key", scopes: ["templates:read"] });
    for (let i = 0; i < 2; i++) {
      const refused = await rest(t.publicUrl, "GET", "/v1/senders", { key: secret });
      expect(refused.json.error.code).toBe("insufficient_scope");
    }
    await t.flushRequestLog();

    await page.click("nav a[href='#refused']");
    const row = page.locator("tr[data-error-code='insufficient_scope']");
    await expect.poll(() => row.locator("[data-test=count]").textContent()).toBe("2");
    expect(await row.textContent()).toContain("GET /v1/senders");
    // The chart (uPlot): 24 buckets holding the 2 refusals, drawn with a time axis and a count axis.
    const chart = page.locator("[data-test=chart]");
    expect(await chart.getAttribute("data-buckets")).toBe("24");
    expect(await chart.getAttribute("data-total")).toBe("2");
    await expect.poll(() => chart.locator(".uplot canvas").count()).toBe(1);
    expect(await chart.getAttribute("data-axes")).toBe("time,refused");
    // The ranges work: 1 h still holds both refusals; 7 d as well, over wider buckets.
    for (const range of ["1h", "7d"]) {
      await page.click(`a[data-range='${range}']`);
      await expect.poll(() => page.getAttribute(`a[data-range='${range}']`, "aria-current")).toBe("true");
      expect(await page.locator("nav a.active").textContent()).toBe("Refused requests");
      await expect.poll(() => page.getAttribute("[data-test=chart]", "data-total")).toBe("2");
      expect(await page.textContent("tr[data-error-code='insufficient_scope'] [data-test=count]")).toBe("2");
    }

    // Revoke it from the page; the public API refuses it from then on.
    // Rolling from the page, the old secret kept for 24 h: both work, the page says until when.
    await page.click("nav a[href='#keys']");
    await page.selectOption("tr[data-key-id] [data-test=roll-overlap]", "86400000");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click("tr[data-key-id] button:has-text('Roll')");
    await expect.poll(() => page.locator("[data-test=secret]").count()).toBe(1);
    const rolled = (await page.textContent("[data-test=secret]"))?.trim() ?? "";
    expect(rolled).toMatch(/^sk_[0-9A-Za-z]{46}$/);
    expect(await page.textContent("tr[data-key-id] [data-test=previous-secret]")).toContain(`previous ${secret.slice(0, 7)}… works until`);
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: rolled })).status).toBe(200);
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: secret })).status).toBe(200);

    // Revoking asks first: dismissed, nothing changes; accepted, the key is revoked.
    page.once("dialog", (dialog) => void dialog.dismiss());
    await page.click("tr[data-key-id] button.danger");
    expect(await page.textContent("tr[data-key-id] .badge")).toBe("active");
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: secret })).status).toBe(200);
    page.once("dialog", (dialog) => {
      expect(dialog.message()).toContain('Revoke the key "browser key"?');
      void dialog.accept();
    });
    await page.click("tr[data-key-id] button.danger");
    await expect.poll(() => page.textContent("tr[data-key-id] .badge")).toBe("revoked");
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: secret })).json.error.code).toBe("key_revoked");
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: rolled })).json.error.code).toBe("key_revoked");
  });

  it("shows messages by status and the credit ledger in the overview", async () => {
    const senderId = await createSender(t, workspaceId);
    const templateId = await createTemplate(t, workspaceId);
    const key = await t.createKey(workspaceId, { scopes: ["messages:send", "messages:read"] });
    const sent = await rest(t.publicUrl, "POST", "/v1/messages", {
      key: key.secret,
      body: { to: "4915123450001", sender: senderId, template: { id: templateId, variables: { name: "Ada", code: "123456" } } },
    });
    expect(sent.status).toBe(200);
    await eventually(async () => {
      const res = await rest(t.publicUrl, "GET", `/v1/messages/${sent.json.message_id}`, { key: key.secret });
      return res.json.status === "read" ? res : undefined;
    });
    await page.goto(`${t.consoleUrl}/#overview`);
    await expect.poll(() => page.textContent("[data-test=messages-total]")).toBe("1");
    expect(await page.textContent("[data-test=credit-balance]")).toBe("41");
    expect(await page.textContent("tr[data-status=read] [data-test=count]")).toBe("1");
    expect(await page.textContent("tr[data-status=failed] [data-test=count]")).toBe("0");
    expect(await page.locator(`section:has-text("Credit ledger") [data-id='${sent.json.message_id}']`).count()).toBe(1);

    // The message log: filtered by status, then the message with its timeline, credits and events.
    await page.click("nav a[href='#messages']");
    await expect.poll(() => page.locator(`tr[data-message-id='${sent.json.message_id}']`).count()).toBe(1);
    await page.selectOption("#message-status", "failed");
    await page.click(".filters button[type=submit]");
    await expect.poll(() => page.textContent("[data-test=message-total]")).toBe("0 messages");
    await page.selectOption("#message-status", "read");
    await page.fill("#message-to", "4915123450001");
    await page.selectOption("#message-since", "1h");
    await page.click(".filters button[type=submit]");
    await expect.poll(() => page.textContent("[data-test=message-total]")).toBe("1 message");
    await page.click(`tr[data-message-id='${sent.json.message_id}'] a`);
    await expect.poll(() => page.locator("[data-test=timeline-status]").allTextContents()).toEqual(["accepted", "sent", "delivered", "read"]);
    expect(await page.textContent("tr[data-credit-kind=spend]")).toContain("-1");
    await expect.poll(() => page.locator("tr[data-event-id]").count()).toBe(3);
    await page.locator("tr[data-event-id]", { hasText: "message.read" }).locator("button", { hasText: "Payload" }).click();
    const payload = JSON.parse((await page.locator("[data-test=event-payload]:visible").textContent()) ?? "{}");
    expect(payload).toMatchObject({ message_id: sent.json.message_id, status: "read", to: "4915123450001" });
  });

  it("adds an endpoint, shows its failed delivery with every attempt, retries it by hand, and disables and enables it", async () => {
    await page.goto(`${t.consoleUrl}/#webhooks`);
    await page.fill("#endpoint-name", "orders backend");
    await page.fill("#endpoint-url", receiver.url);
    await page.check("input[value='message.delivered']");
    await page.click("form button[type=submit]");
    const secret = (await page.textContent("[data-test=secret]"))?.trim() ?? "";
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const row = page.locator("tr[data-endpoint-id]");
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator("[data-test=secret-hint]").textContent()).toBe(`whsec_${secret.slice(6, 10)}…${secret.slice(-4)}`);
    const endpointId = (await row.getAttribute("data-endpoint-id")) ?? "";

    // A real send reaches delivered; the receiver answers 500 to all eight automatic attempts.
    const senderId = await createSender(t, workspaceId, "4915100000077");
    const templateId = await createTemplate(t, workspaceId, { name: "webhook_probe" });
    const key = await t.createKey(workspaceId, { scopes: ["messages:send"] });
    const sent = await rest(t.publicUrl, "POST", "/v1/messages", {
      key: key.secret,
      body: { to: "4915123450002", sender: senderId, template: { id: templateId, variables: { name: "Ada", code: "1" } } },
    });
    expect(sent.status, sent.text).toBe(200);
    const delivery = await eventually(async () => {
      const res = await rest(t.consoleUrl, "GET", `/console/v1/deliveries?endpoint_id=${endpointId}`, { key: TEST_CONSOLE_TOKEN });
      const found = res.json.data[0];
      return found?.status === "failed" ? found : undefined;
    }, 30_000);
    expect(receiver.requests).toHaveLength(8);

    await page.click(`tr[data-endpoint-id='${endpointId}'] a`);
    const deliveryRow = page.locator(`tr[data-delivery-id='${delivery.id}']`);
    expect(await deliveryRow.locator("[data-test=status]").textContent()).toBe("failed");
    expect(await deliveryRow.locator("[data-test=attempt-count]").textContent()).toBe("8");
    await deliveryRow.locator("button.link", { hasText: "Attempts" }).click();
    await expect.poll(() => page.locator("[data-test=attempts] tr[data-attempt-id]").count()).toBe(8);
    expect(await page.locator("[data-test=attempts] [data-test=answer]").first().textContent()).toContain("status 500 from the test receiver");
    await deliveryRow.locator("[data-test=show-payload]").click();
    const payload = JSON.parse((await page.textContent("[data-test=payload]")) ?? "{}");
    expect(payload).toMatchObject({ id: delivery.event_id, type: "message.delivered", data: { message_id: sent.json.message_id } });

    // The cause fixed, a person retries it from the page: one manual attempt that succeeds.
    receiver.behave(answerOk);
    await deliveryRow.locator("button", { hasText: "Retry" }).click();
    await expect.poll(() => page.locator(`tr[data-delivery-id='${delivery.id}'] [data-test=status]`).textContent()).toBe("succeeded");
    await page.locator(`tr[data-delivery-id='${delivery.id}'] button.link`, { hasText: "Attempts" }).click();
    const manual = page.locator("[data-test=attempts] tr", { has: page.locator("[data-test=trigger]", { hasText: "manual" }) });
    await expect.poll(() => manual.count()).toBe(1);
    expect(await manual.textContent()).toContain("succeeded");
    expect(receiver.requests).toHaveLength(9);
    expect(receiver.requests[8]?.body).toBe(receiver.requests[0]?.body);

    // Disable with the page (it asks first), then enable again.
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(`tr[data-endpoint-id='${endpointId}'] button.danger`);
    await expect.poll(() => page.textContent(`tr[data-endpoint-id='${endpointId}'] [data-test=enabled]`)).toBe("disabled");
    expect(await page.textContent(`tr[data-endpoint-id='${endpointId}'] [data-test=disabled-reason]`)).toBe("Disabled in the console");
    await page.click(`tr[data-endpoint-id='${endpointId}'] button:has-text("Enable")`);
    await expect.poll(() => page.textContent(`tr[data-endpoint-id='${endpointId}'] [data-test=enabled]`)).toBe("enabled");

    // Rotating the secret from the page (the old one signs too for 24 h, the first choice): the new one is shown once,
    // the hint is the new one's, and the next delivery carries a signature for each.
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(`tr[data-endpoint-id='${endpointId}'] button:has-text("Rotate secret")`);
    await expect.poll(async () => (await page.textContent("[data-test=secret]"))?.trim()).not.toBe(secret);
    const rotated = (await page.textContent("[data-test=secret]"))?.trim() ?? "";
    expect(rotated).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await page.textContent(`tr[data-endpoint-id='${endpointId}'] [data-test=secret-hint]`)).toBe(`whsec_${rotated.slice(6, 10)}…${rotated.slice(-4)}`);
    expect(await page.textContent(`tr[data-endpoint-id='${endpointId}'] [data-test=previous-secret]`)).toContain("previous secret signs too until");
    await t.service.events.publish({ workspaceId, type: "message.delivered", data: { message_id: "msg_rotation" } });
    const signed = await eventually(async () => receiver.requests[9]);
    const v1s = (signed.headers["service-signature"] as string).split(",").filter((part) => part.startsWith("v1="));
    expect(v1s).toHaveLength(2);
    expect(verifyWebhookSignature(signed.body, signed.headers["service-signature"] as string, rotated)).toBe(true);
    expect(verifyWebhookSignature(signed.body, signed.headers["service-signature"] as string, secret)).toBe(true);

    // A test event of a chosen type from the endpoint's deliveries: delivered, listed with a "test" badge.
    await page.click(`tr[data-endpoint-id='${endpointId}'] a`);
    await page.selectOption("[data-test=test-event-type]", "message.read");
    await page.click("button:has-text('Send test event')");
    const testRow = page.locator("tr[data-delivery-id]", { has: page.locator("[data-test=test-badge]") });
    await expect.poll(() => testRow.count()).toBe(1);
    expect(await testRow.textContent()).toContain("message.read");
    expect(await testRow.locator("[data-test=status]").textContent()).toBe("succeeded");
    const testRequest = receiver.requests.at(-1)!;
    expect(JSON.parse(testRequest.body)).toMatchObject({ type: "message.read", test: true });
    expect(verifyWebhookSignature(testRequest.body, testRequest.headers["service-signature"] as string, rotated)).toBe(true);

    // An event published while the endpoint was disabled is recovered from the page: counted first, then sent.
    const consoleCall = (path: string) => rest(t.consoleUrl, "POST", path, { key: TEST_CONSOLE_TOKEN, body: {} });
    await consoleCall(`/console/v1/webhook_endpoints/${endpointId}:disable`);
    const missed = await t.service.events.publish({ workspaceId, type: "message.delivered", data: { message_id: "msg_missed" } });
    await consoleCall(`/console/v1/webhook_endpoints/${endpointId}:enable`);
    await page.click("button:has-text('Count')");
    await expect.poll(() => page.textContent("[data-test=recover-outcome]")).toBe("would recover 1 (0 failed, 1 never attempted)");
    expect(receiver.requests.some((r) => r.headers["service-delivery"] === missed._id)).toBe(false);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click("button:has-text('Recover')");
    await expect.poll(() => page.textContent("[data-test=recover-outcome]")).toBe("recovered 1 (0 failed, 1 never attempted)");
    await eventually(async () => receiver.requests.find((r) => r.headers["service-delivery"] === missed._id));

    // A rate limit set in the endpoint's row, then removed.
    const getEndpoint = async () => (await rest(t.consoleUrl, "GET", `/console/v1/webhook_endpoints/${endpointId}`, { key: TEST_CONSOLE_TOKEN })).json;
    await page.fill(`tr[data-endpoint-id='${endpointId}'] [data-test=rate-limit]`, "7");
    await page.click(`tr[data-endpoint-id='${endpointId}'] button:has-text("Set limit")`);
    await expect.poll(() => page.textContent(`tr[data-endpoint-id='${endpointId}'] [data-test=rate-limit-now]`)).toBe("at most 7 attempts/s");
    expect((await getEndpoint()).rate_limit).toBe(7);
    await page.fill(`tr[data-endpoint-id='${endpointId}'] [data-test=rate-limit]`, "");
    await page.click(`tr[data-endpoint-id='${endpointId}'] button:has-text("Set limit")`);
    await expect.poll(() => page.textContent(`tr[data-endpoint-id='${endpointId}'] [data-test=rate-limit-now]`)).toBe("no rate limit");
    expect((await getEndpoint()).rate_limit).toBeNull();
  });

  it("manages console users and shows the audit log", async () => {
    await page.goto(`${t.consoleUrl}/#users`);
    await expect.poll(() => page.locator("tr[data-user-id]", { hasText: ADMIN.email }).count()).toBe(1);
    await page.fill("#user-email", "web-new@example.com");
    await page.fill("#user-password", "a long enough password");
    await page.selectOption("#user-role", "viewer");
    await page.click("form button[type=submit]");
    const row = page.locator("tr[data-user-id]", { hasText: "web-new@example.com" });
    await expect.poll(() => row.textContent()).toContain("Browser workspace: viewer");
    await row.locator("button", { hasText: "Make admin here" }).click();
    await expect.poll(() => row.textContent()).toContain("Browser workspace: admin");
    page.once("dialog", (dialog) => void dialog.accept());
    await row.locator("button", { hasText: "Delete" }).click();
    await expect.poll(() => row.count()).toBe(0);

    await page.click("nav a[href='#audit']");
    // The key the admin created in the first test, by the admin's email.
    const entry = page.locator("tr[data-audit-id]", { hasText: "CreateApiKey" }).filter({ hasText: ADMIN.email });
    await expect.poll(() => entry.count()).toBe(1);
    await entry.locator("button", { hasText: "Request" }).click();
    expect(JSON.parse((await page.locator("[data-test=audit-request]:visible").textContent()) ?? "{}")).toMatchObject({ name: "browser key" });
  });

  it("shows senders, templates with the request that sends them, credits with a confirmed top-up, and form responses with their files", async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    // Senders: each with its id shortened and copied whole; an admin adds one and archives it (after a confirmation).
    await page.goto(`${t.consoleUrl}/#senders`);
    await page.fill("#sender-phone", "4915100000321");
    await page.fill("#sender-name", "Support line");
    await page.click("form button[type=submit]");
    const senderRow = page.locator("tr[data-sender-id]", { hasText: "Support line" });
    await expect.poll(() => senderRow.count()).toBe(1);
    const senderId = (await senderRow.getAttribute("data-sender-id")) ?? "";
    expect(senderId).toMatch(/^snd_[0-9a-f-]{36}$/);
    expect(await senderRow.locator(".id-chip code").textContent()).toBe(`snd_${senderId.slice(4, 12)}…${senderId.slice(-4)}`);
    await senderRow.locator("button.copy").click();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(senderId);
    expect(await senderRow.locator("[data-test=phone-number]").textContent()).toBe("4915100000321");
    page.once("dialog", (dialog) => void dialog.dismiss());
    await senderRow.locator("button", { hasText: "Archive" }).click();
    expect(await senderRow.locator("[data-test=status]").textContent()).toBe("active");
    page.once("dialog", (dialog) => void dialog.accept());
    await senderRow.locator("button", { hasText: "Archive" }).click();
    await expect.poll(() => page.locator(`tr[data-sender-id='${senderId}'] [data-test=status]`).textContent()).toBe("archived");

    // Templates: body, variables with their examples, and a send request that works as copied.
    const templateId = await createTemplate(t, workspaceId, {
      name: "page_probe",
      body: "Hi {{name}}, your order {{order}} ships {{when}}",
      examples: { name: "Ada", order: "A-1042" },
      optional: ["when"],
    });
    const activeSender = await createSender(t, workspaceId, "4915100000654");
    await page.goto(`${t.consoleUrl}/#templates`);
    const card = page.locator(`section[data-template-id='${templateId}']`);
    await expect.poll(() => card.count()).toBe(1);
    expect(await card.locator("[data-test=template-body]").textContent()).toBe("Hi {{name}}, your order {{order}} ships {{when}}");
    expect(await card.locator("tr[data-variable]").evaluateAll((rows) => rows.map((r) => r.textContent))).toEqual(["namerequiredAda", "orderrequiredA-1042", "whenoptional—"]);
    await card.locator("[data-test=copy-send-request]").click();
    const snippet = String(await page.evaluate("navigator.clipboard.readText()"));
    expect(snippet).toContain(`curl -s ${t.publicUrl}/v1/messages `);
    expect(snippet).toContain(`"template":{"id":"${templateId}","variables":{"name":"Ada","order":"A-1042","when":"when"}}`);
    const key = await t.createKey(workspaceId, { scopes: ["messages:send"] });
    // Run as copied, in a shell (asynchronously: the service answering it runs in this process).
    const run = await execFileAsync("bash", ["-c", snippet], { env: { ...process.env, API_KEY: key.secret } });
    const answer = JSON.parse(run.stdout);
    expect(answer).toMatchObject({ status: "accepted", template_id: templateId });
    expect(answer.sender).not.toBe(senderId); // an active sender of the workspace, not the one archived above

    // Credits: a top-up asks first (dismissed: nothing changes), then shows in the balance and the ledger.
    await page.goto(`${t.consoleUrl}/#credits`);
    const balance = Number((await page.textContent("[data-test=credit-balance]"))?.replaceAll(",", ""));
    await page.fill("#topup-amount", "250");
    await page.fill("#topup-note", "browser top-up");
    page.once("dialog", (dialog) => void dialog.dismiss());
    await page.click("form button[type=submit]");
    expect(Number((await page.textContent("[data-test=credit-balance]"))?.replaceAll(",", ""))).toBe(balance);
    page.once("dialog", (dialog) => {
      expect(dialog.message()).toContain("Add 250 credits to \"Browser workspace\"?");
      void dialog.accept();
    });
    await page.click("form button[type=submit]");
    await expect.poll(async () => Number((await page.textContent("[data-test=credit-balance]"))?.replaceAll(",", ""))).toBe(balance + 250);
    const topUp = page.locator("tr[data-entry-id]").first();
    expect(await topUp.textContent()).toContain("browser top-up");
    expect(await topUp.getAttribute("data-entry-id")).toMatch(/^top_up:/);

    // Forms: a submission with the sample files, each downloaded from the page byte for byte.
    const formTemplate = await createTemplate(t, workspaceId, { name: "page_form", body: "Hi {{name}}, sign up", flowId: "998877" });
    const formKey = await t.createKey(workspaceId, { scopes: ["messages:send"] });
    const sent = await rest(t.publicUrl, "POST", "/v1/messages", {
      key: formKey.secret,
      body: { to: "4915123450077", sender: activeSender, template: { id: formTemplate, variables: { name: "Ada" }, flow: { token: "browser-form" } } },
    });
    expect(sent.status, sent.text).toBe(200);
    await eventually(async () => ((await t.service.db.collection("messages").findOne({ _id: sent.json.message_id, wa_message_id: { $ne: null } })) ? true : undefined));
    const fixtures = path.join(projectRoot, "test", "fixtures");
    const submitted = await msgsvc(t, ["simulate", "flow", "--message", sent.json.message_id, "--response", '{"name":"Ada","plan":"pro"}',
      "--file", `id_photo=${path.join(fixtures, "photo.jpg")}`, "--file", `contract=${path.join(fixtures, "contract.pdf")}`, "--wait", "--json"]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const flowResponseId = JSON.parse(submitted.stdout).flow_response_id as string;
    await page.goto(`${t.consoleUrl}/#forms`);
    const responseRow = page.locator(`tr[data-flow-response-id='${flowResponseId}']`);
    await expect.poll(() => responseRow.count()).toBe(1);
    expect(await responseRow.locator("[data-test=response]").textContent()).toBe("nameAdaplanpro");
    expect(await responseRow.locator(`[data-id='${sent.json.message_id}']`).count()).toBe(1);
    const downloads = await mkdtemp(path.join(os.tmpdir(), "web-console-downloads-"));
    try {
      for (const [index, name] of [[0, "photo.jpg"], [1, "contract.pdf"]] as const) {
        const [download] = await Promise.all([page.waitForEvent("download"), responseRow.locator(`[data-file-index='${index}'] [data-test=download]`).click()]);
        expect(download.suggestedFilename()).toBe(name);
        const saved = path.join(downloads, name);
        await download.saveAs(saved);
        const sha = async (file: string) => createHash("sha256").update(await readFile(file)).digest("hex");
        expect(await sha(saved)).toBe(await sha(path.join(fixtures, name)));
      }
    } finally {
      await rm(downloads, { recursive: true, force: true });
    }
  });

  it("shows the opt-out list, adds a number, removes it after a confirmation, and changes the reply keywords", async () => {
    await page.goto(`${t.consoleUrl}/#opt-outs`);
    await expect.poll(() => page.textContent("[data-test=opt-out-total]")).toContain("0 numbers");
    await page.fill("#opt-out-number", "4915122310001");
    await page.click("form button[type=submit]:has-text('Add to the list')");
    const row = page.locator("tr[data-phone-number='4915122310001']");
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator("[data-test=source]").textContent()).toContain("console (web-admin@example.com)");
    const listed = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/opt_outs`, { key: TEST_CONSOLE_TOKEN });
    expect(listed.json.data.map((o: { phone_number: string }) => o.phone_number)).toEqual(["4915122310001"]);
    page.once("dialog", (dialog) => void dialog.dismiss());
    await row.locator("button", { hasText: "Remove" }).click();
    expect(await row.count()).toBe(1);
    page.once("dialog", (dialog) => {
      expect(dialog.message()).toContain("Take 4915122310001 off the opt-out list?");
      void dialog.accept();
    });
    await row.locator("button", { hasText: "Remove" }).click();
    await expect.poll(() => row.count()).toBe(0);
    await page.fill("#opt-out-keywords", "STOP, basta");
    await page.click("form button[type=submit]:has-text('Save keywords')");
    await expect.poll(async () => (await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/opt_out_settings`, { key: TEST_CONSOLE_TOKEN })).json.opt_out_keywords).toEqual(["STOP", "BASTA"]);
  });

  it("lays every page out at 1280 and 390 px wide without overflow, stray text or console errors", async () => {
    const pages = ["overview", "messages", "forms", "senders", "templates", "credits", "keys", "webhooks", "refused", "refused?since=7d", "opt-outs", "users", "audit"];
    const listed = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/messages?page_size=1`, { key: TEST_CONSOLE_TOKEN });
    const messageId = listed.json.data[0]?.message_id as string | undefined;
    if (messageId) pages.push(`messages/${messageId}`);
    const endpoints = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/webhook_endpoints`, { key: TEST_CONSOLE_TOKEN });
    const endpoint = endpoints.json.data[0]?.id as string | undefined;
    if (endpoint) pages.push(`webhooks/${endpoint}`);
    const senders = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/senders`, { key: TEST_CONSOLE_TOKEN });
    const sender = senders.json.data[0]?.id as string | undefined;
    if (sender) pages.push(`senders/${sender}`);
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 800 });
      for (const name of pages) {
        await page.goto(`${t.consoleUrl}/#${name}`);
        await page.reload(); // a fresh load of each page, as a bookmark opens it
        await expect.poll(() => page.locator("main p.muted", { hasText: "Loading…" }).count(), { message: name }).toBe(0);
        await expect.poll(() => page.locator("nav a.active").count(), { message: name }).toBe(1);
        const layout = (await page.evaluate(LAYOUT_CHECK)) as { scrollWidth: number; clientWidth: number; stray: string[]; alerts: string[] };
        expect(layout.scrollWidth, `#${name} at ${width} px`).toBeLessThanOrEqual(layout.clientWidth);
        expect(layout.stray, `#${name}`).toEqual([]);
        expect(layout.alerts, `#${name}`).toEqual([]);
        // Kept as a test artifact (.cache is ignored), to look at what was laid out.
        const file = name.includes("/") ? `${name.split("/")[0]}-one` : name.replace(/[^a-z0-9]+/gi, "-");
        await page.screenshot({ path: path.join(SCREENSHOTS, `${width}-${file}.png`), fullPage: true });
      }
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(consoleErrors).toEqual([]);
    const favicon = await fetch(`${t.consoleUrl}/favicon.ico`);
    expect(favicon.status).toBe(200);
    expect(favicon.headers.get("content-type")).toBe("image/svg+xml");
  }, 60_000);

  it("on a phone (390 px) reaches every tab through a menu, shows rows as cards with status, credits and actions in view, ids shortened with a copy button and numbers on one line; at 1280 px the header is one line", async () => {
    const key = await t.createKey(workspaceId, { name: "phone key" });
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`${t.consoleUrl}/#overview`);
    await page.reload();
    const inView = async (locator: ReturnType<Page["locator"]>, what: string) => {
      const box = await locator.boundingBox();
      expect(box, what).not.toBeNull();
      expect(box!.x, what).toBeGreaterThanOrEqual(0);
      expect(box!.x + box!.width, what).toBeLessThanOrEqual(390);
    };
    // The tabs: hidden behind the menu's button, each in view once it is open, each reached.
    const links = page.locator("nav .tabs a");
    await expect.poll(() => links.count()).toBe(12);
    const names = await links.allTextContents();
    expect(names).toEqual(["Overview", "Messages", "Forms", "Senders", "Templates", "Credits", "API keys", "Webhooks", "Refused requests", "Opt-outs", "Users", "Audit log"]);
    expect(await links.first().isVisible()).toBe(false);
    for (const name of names) {
      await page.click("nav .menu-toggle");
      const link = page.locator("nav .tabs a", { hasText: name }).first();
      await inView(link, name);
      await link.click();
      await expect.poll(() => page.textContent("nav .menu-toggle")).toBe(`Menu · ${name}`);
      await expect.poll(() => page.locator("main p.muted", { hasText: "Loading…" }).count(), { message: name }).toBe(0);
      const layout = (await page.evaluate(LAYOUT_CHECK)) as { scrollWidth: number; clientWidth: number };
      expect(layout.scrollWidth, name).toBeLessThanOrEqual(layout.clientWidth);
    }

    // Messages: each row a card; its id shortened and copied whole, its number on one line, status and credits in view.
    await page.goto(`${t.consoleUrl}/#messages`);
    const row = page.locator("tr[data-message-id]").first();
    await expect.poll(() => row.count()).toBe(1);
    const messageId = (await row.getAttribute("data-message-id")) ?? "";
    expect(await row.evaluate((r) => (globalThis as unknown as { getComputedStyle(e: unknown): { display: string } }).getComputedStyle(r).display)).toBe("block");
    await inView(row, "the card");
    await inView(row.locator("[data-test=status]"), "status");
    await inView(row.locator("[data-test=credits]"), "credits");
    const chip = row.locator(`.id-chip[data-id='${messageId}']`);
    expect(await chip.locator("a").textContent()).toBe(`msg_${messageId.slice(4, 12)}…${messageId.slice(-4)}`);
    await inView(chip.locator("button.copy"), "copy button");
    await chip.locator("button.copy").click();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(messageId);
    const lines = (selector: string) => page.locator(selector).evaluateAll((nodes) => nodes.map((n) => n.getClientRects().length));
    expect(new Set(await lines("tr[data-message-id] .num"))).toEqual(new Set([1]));
    expect(new Set(await lines("tr[data-message-id] .id-chip"))).toEqual(new Set([1]));

    // API keys and webhooks: their actions in view on the card.
    await page.goto(`${t.consoleUrl}/#keys`);
    const keyRow = page.locator(`tr[data-key-id='${key.id}']`);
    await expect.poll(() => keyRow.count()).toBe(1);
    await inView(keyRow.locator("button", { hasText: "Roll" }), "Roll");
    await inView(keyRow.locator("button.danger"), "Revoke");
    await inView(keyRow.locator(".badge"), "key status");
    await page.goto(`${t.consoleUrl}/#webhooks`);
    const endpointRow = page.locator("tr[data-endpoint-id]").first();
    await expect.poll(() => endpointRow.count()).toBe(1);
    await inView(endpointRow.locator("[data-test=enabled]"), "endpoint status");
    await inView(endpointRow.locator("button", { hasText: /^(Disable|Enable)$/ }), "Disable or Enable");

    // At 1280 px: the header on one line, the picker no wider than its names need, "Sign out" on one line.
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${t.consoleUrl}/#overview`);
    const tops = await page.locator("header > :not([hidden])").evaluateAll((nodes) => nodes.map((n) => Math.round(n.getBoundingClientRect().top + n.getBoundingClientRect().height / 2)));
    expect(Math.max(...tops) - Math.min(...tops)).toBeLessThanOrEqual(4);
    expect((await page.locator("#workspace").boundingBox())!.width).toBeLessThanOrEqual(280);
    const signOut = page.locator("#sign-out");
    expect(await signOut.evaluate((b) => b.getClientRects().length === 1 && b.scrollHeight <= b.clientHeight + 1)).toBe(true);
    expect((await signOut.boundingBox())!.height).toBeLessThan(30);
  });

  it("shows a viewer the keys and endpoints without the controls that change them", async () => {
    const viewer = { email: "web-viewer@example.com", password: "web-viewer-password-1" };
    const created = await rest(t.consoleUrl, "POST", "/console/v1/users", {
      key: TEST_CONSOLE_TOKEN,
      body: { ...viewer, roles: [{ workspace_id: workspaceId, role: "viewer" }] },
    });
    expect(created.status, created.text).toBe(200);
    const context = await browser.newContext();
    const viewerPage = await context.newPage();
    await viewerPage.goto(t.consoleUrl);
    await viewerPage.fill("#email", viewer.email);
    await viewerPage.fill("#password", viewer.password);
    await viewerPage.click("button[type=submit]");
    await expect.poll(() => viewerPage.textContent("#who")).toBe(viewer.email);

    await viewerPage.click("nav a[href='#keys']");
    await expect.poll(() => viewerPage.locator("tr[data-key-id]").count()).toBeGreaterThan(0);
    expect(await viewerPage.locator("#key-name").count()).toBe(0);
    expect(await viewerPage.locator("tr[data-key-id] button:not(.copy)").count()).toBe(0);

    await viewerPage.click("nav a[href='#webhooks']");
    await expect.poll(() => viewerPage.locator("tr[data-endpoint-id]").count()).toBe(1);
    expect(await viewerPage.locator("#endpoint-name").count()).toBe(0);
    expect(await viewerPage.locator("tr[data-endpoint-id] button:not(.copy)").count()).toBe(0);
    // Nor the forms that add senders, templates' archive buttons, or a top-up.
    for (const [view, control] of [["senders", "#sender-phone"], ["templates", "section.template button.danger"], ["credits", "#topup-amount"]] as const) {
      await viewerPage.click(`nav a[href='#${view}']`);
      await expect.poll(() => viewerPage.locator("main p.muted", { hasText: "Loading…" }).count()).toBe(0);
      expect(await viewerPage.locator(control).count(), view).toBe(0);
    }
    await context.close();
  });

  it("shows a sender's page: its queue behind a slow number with why the messages wait, the rate sent, the network's refusals; an admin changes its throughput", async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    const added = await rest(t.consoleUrl, "POST", `/console/v1/workspaces/${workspaceId}/credits:add`, { key: TEST_CONSOLE_TOKEN, body: { amount: 100 } });
    expect(added.status, added.text).toBe(200);
    const slow = await rest(t.consoleUrl, "POST", `/console/v1/workspaces/${workspaceId}/senders`, {
      key: TEST_CONSOLE_TOKEN,
      body: { phone_number: "4915100000999", name: "Slow line", throughput_mps: 1 },
    });
    const senderId = slow.json.id as string;
    const templateId = await createTemplate(t, workspaceId, { name: "queue_probe" });
    const key = await t.createKey(workspaceId, { scopes: ["messages:send"] });
    const items = Array.from({ length: 8 }, (_, i) => ({ to: `49151777000${i}`, sender: senderId, template: { id: templateId, variables: { name: "Ada", code: String(i) } } }));
    expect((await rest(t.publicUrl, "POST", "/v1/messages:batch", { key: key.secret, body: { messages: items } })).status).toBe(200);
    // At 1 a second, some wait in the database for their turn, with their reason.
    const messages = t.service.db.collection("messages");
    await eventually(async () => ((await messages.countDocuments({ sender_id: senderId, "dispatch.queued_reason": "sender_rate", status: "accepted" })) >= 2 ? true : undefined), 20_000, 100);

    await page.goto(`${t.consoleUrl}/#senders`);
    await page.locator(`tr[data-sender-id='${senderId}'] [data-test=sender-page]`).click();
    await expect.poll(() => page.locator("[data-test=sender-queue]").count()).toBe(1);
    expect(Number((await page.textContent("[data-test=queue-depth]"))?.replace(/\D/g, ""))).toBeGreaterThanOrEqual(1);
    expect(await page.textContent("[data-test=queue-oldest]")).toContain("waiting");
    expect(await page.textContent("[data-test=queue-sent]")).toMatch(/of 1\/s\)$/);
    expect(await page.locator("tr[data-reason='sender_rate']").count()).toBe(1);
    expect(await page.textContent("[data-test=sender-refusals]")).toContain("None.");
    expect(await page.textContent("[data-test=sender-throughput-source]")).toBe("given when it was created or changed");

    // An admin raises its throughput: the page and the API show the new rate.
    await page.fill("#sender-throughput", "1000");
    await page.click("form button[type=submit]:has-text('Save')");
    await expect.poll(() => page.textContent("[data-test=sender-throughput]")).toBe("1000/s");
    expect((await rest(t.consoleUrl, "GET", `/console/v1/senders/${senderId}`, { key: TEST_CONSOLE_TOKEN })).json.throughput_mps).toBe(1000);
    expect(consoleErrors).toEqual([]);
  });

  it("shows a wrong password as an error, signs the operator in with the console token, and serves the page with a strict CSP", async () => {
    const res = await fetch(t.consoleUrl);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    const context = await browser.newContext();
    const fresh = await context.newPage();
    await fresh.goto(t.consoleUrl);
    await fresh.fill("#email", ADMIN.email);
    await fresh.fill("#password", "not the password");
    await fresh.click("button[type=submit]");
    await expect.poll(() => fresh.textContent("[role=alert]")).toBe("Wrong email or password");

    // The operator signs in with the console token alone.
    await fresh.fill("#email", "");
    await fresh.fill("#password", "");
    await fresh.click("button[type=submit]");
    await expect.poll(() => fresh.textContent("[role=alert]")).toBe("Enter your email and password, or a console token");
    await fresh.fill("#token", TEST_CONSOLE_TOKEN);
    await fresh.click("button[type=submit]");
    await expect.poll(() => fresh.textContent("#who")).toBe("operator");
    await expect.poll(() => fresh.locator("#workspace option", { hasText: "Browser workspace" }).count()).toBe(1);
    await context.close();
  });
});
