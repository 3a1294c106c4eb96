// The "Opt-outs" page of the web console: the workspace's opt-out list (numbers that asked not to be
// contacted; sends to them are refused with recipient_opted_out), a number added or removed by hand, and the
// reply keywords. Its own module, handed the page's helpers by console.js, so that the page's layout can change
// around it.

/**
 * Renders the page into `body`. `ui` holds the page's helpers: el, fill, api, table, when, ws (the workspace's
 * console API path), errorLine, createForm, confirmed, statusBadge, canChange.
 */
export async function renderOptOuts(body, ui) {
  const { el, fill, api, table, when, ws, errorLine, createForm, confirmed, statusBadge, canChange } = ui;
  const [list, settings] = await Promise.all([api("GET", `${ws()}/opt_outs?page_size=100`), api("GET", `${ws()}/opt_out_settings`)]);
  const canEdit = canChange();
  const rerender = () => renderOptOuts(body, ui).catch((err) => body.prepend(errorLine(err)));
  const remove = (entry) => async () => {
    if (!confirmed(`Take ${entry.phone_number} off the opt-out list? Sends to it are accepted again.`)) return;
    try {
      await api("DELETE", `${ws()}/opt_outs/${encodeURIComponent(entry.phone_number)}`);
      await rerender();
    } catch (err) {
      body.prepend(errorLine(err));
    }
  };
  const why = (e) => (e.source === "reply" ? `replied "${e.keyword}"` : e.source === "network_error" ? `network error ${e.error_code}` : `console (${e.changed_by ?? "?"})`);
  const rows = list.data.map((e) =>
    el("tr", { "data-phone-number": e.phone_number },
      el("td", { class: "mono" }, e.phone_number),
      el("td", {}, statusBadge(e.status === "opted_out" ? "opted out" : e.status)),
      el("td", { "data-test": "source" }, why(e), e.message_id ? el("div", { class: "mono muted" }, e.message_id) : null),
      el("td", {}, when(e.updated_at)),
      el("td", {}, canEdit ? el("button", { class: "danger", onclick: remove(e) }, "Remove") : null)));
  const number = el("input", { type: "text", id: "opt-out-number", inputmode: "numeric", required: true, placeholder: "4915112345678" });
  const form = createForm("Add to the list", async () => {
    await api("POST", `${ws()}/opt_outs`, { phone_number: number.value.trim() });
    await rerender();
  }, el("label", { for: "opt-out-number" }, "Number"), number);
  const optOutWords = el("input", { type: "text", id: "opt-out-keywords", value: settings.opt_out_keywords.join(", ") });
  const optInWords = el("input", { type: "text", id: "opt-in-keywords", value: settings.opt_in_keywords.join(", ") });
  const words = (input) => input.value.split(",").map((w) => w.trim()).filter(Boolean);
  const keywordsForm = createForm("Save keywords", async () => {
    await api("PATCH", `${ws()}/opt_out_settings?update_mask=opt_out_keywords,opt_in_keywords`, { opt_out_keywords: words(optOutWords), opt_in_keywords: words(optInWords) });
    await rerender();
  }, el("label", { for: "opt-out-keywords" }, "Opt-out keywords"), optOutWords, el("label", { for: "opt-in-keywords" }, "Opt-in keywords"), optInWords);
  fill(
    body,
    el("section", { class: "card" }, el("h2", {}, "Opt-out list"),
      el("p", { class: "muted", "data-test": "opt-out-total" }, `${list.total} number${list.total === 1 ? "" : "s"} asked not to be contacted; sends to them are refused.`),
      rows.length === 0 ? el("p", { class: "muted" }, "Nobody opted out.") : table(["Number", "Status", "Why", "Since", ""], rows)),
    canEdit ? el("section", { class: "card" }, el("h2", {}, "Add a number"), form) : null,
    el("section", { class: "card" }, el("h2", {}, "Reply keywords"),
      el("p", { class: "muted" }, `A reply whose whole text is one of these (any case) changes the list${settings.defaults ? "; these are the service's defaults" : ""}.`),
      canEdit ? keywordsForm : el("p", { "data-test": "keywords" }, `${settings.opt_out_keywords.join(", ")} / ${settings.opt_in_keywords.join(", ")}`)),
  );
}
