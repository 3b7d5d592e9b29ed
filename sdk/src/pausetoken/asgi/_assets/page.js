// The approval page's script. It reads the token from the URL fragment (never sent to the
// server in the address), asks the server what the token asks, offers exactly the allowed
// decisions or options, and posts the answer. Everything is built with DOM calls and
// textContent: nothing from the payload is ever parsed as HTML. Once read, the token is taken
// out of the address bar and the tab's history; it stays in this script's memory only.
// Names and values are shown exactly as sent: characters that would hide or disguise text
// (controls, bidi overrides, zero-width and other invisible ones) are shown as escapes.
"use strict";

(function () {
  const meta = (name) => document.querySelector(`meta[name="pausetoken-${name}"]`).content;
  const CSRF = meta("csrf");
  const DESCRIBE_URL = meta("describe");
  const ANSWER_URL = meta("answer");
  const DECISION_LABELS = {
    approve: "Approve",
    edit: "Edit and approve",
    reject: "Reject",
    respond: "Respond instead",
  };
  const DECISION_HINTS = {
    approve: "Run the action as proposed.",
    edit: "Change the arguments, then run it.",
    reject: "Do not run the action.",
    respond: "Do not run it; send a message back instead.",
  };

  // How a person reads a kind's name: the ready-made kinds have labels, any other name is
  // shown as words ("refund_approval" as "Refund approval").
  const KIND_LABELS = {
    "pausetoken.approval": "Approval",
    "pausetoken.question": "Questions",
    "langchain.tool_approval": "Tool call approval",
    "langchain.review": "Tool call review",
  };
  // Checking again while someone else's answer is being recorded: after the server's
  // Retry-After, but at most this many seconds apart, and this many times at most.
  const POLL_MAX_SECONDS = 5;
  const POLL_MAX_TIMES = 120;

  const heading = document.getElementById("heading");
  const content = document.getElementById("content");

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === false || value === null || value === undefined) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function setState(state, title, ...children) {
    document.body.dataset.state = state;
    heading.textContent = title;
    content.replaceChildren(...children.filter((child) => child !== null && child !== undefined));
  }

  // -- characters that hide or disguise text -----------------------------------------------

  // Controls, format characters (bidi overrides and isolates, zero-width ones, tags), line
  // and paragraph separators, every space but U+0020, private-use, unassigned and lone
  // surrogate code points, and the fillers and selectors that draw nothing.
  const HIDDEN_CLASS =
    "[\\p{Cc}\\p{Cf}\\p{Co}\\p{Cn}\\p{Cs}\\p{Zl}\\p{Zp}\\u00A0\\u1680\\u2000-\\u200A\\u202F\\u205F\\u3000" +
    "\\u034F\\u115F\\u1160\\u17B4\\u17B5\\u180B-\\u180F\\u3164\\uFE00-\\uFE0F\\uFFA0\\u{E0100}-\\u{E01EF}]";
  const HIDDEN = new RegExp(`^${HIDDEN_CLASS}$`, "u");
  const HIDDEN_ALL = new RegExp(HIDDEN_CLASS, "gu");
  const SHORT_ESCAPES = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

  function codePoint(char) {
    return char.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
  }

  function escapeOf(char) {
    if (char in SHORT_ESCAPES) return SHORT_ESCAPES[char];
    const hex = codePoint(char).toLowerCase();
    return hex.length > 4 ? `\\u{${hex}}` : `\\u${hex}`;
  }

  function marker(text, title) {
    return el("span", { class: "hidden-char", title, text });
  }

  // The text as nodes, each hidden character replaced by its escape in a style of its own.
  // lines: line feeds stay line breaks (in values); edges: spaces that start or end the text
  // are marked too (in names, where "amount " and "amount" would look alike).
  function reveal(text, { lines = false, edges = false } = {}) {
    text = String(text);
    const nodes = [];
    if (edges && text === "") return [marker("(empty)", "An empty name")];
    let plain = "";
    const flush = () => {
      if (plain) nodes.push(document.createTextNode(plain));
      plain = "";
    };
    const chars = [...text];
    const start = edges ? chars.findIndex((c) => c !== " ") : 0;
    const end = edges ? chars.length - [...chars].reverse().findIndex((c) => c !== " ") : chars.length;
    chars.forEach((char, index) => {
      if (edges && char === " " && (start === -1 || index < start || index >= end)) {
        flush();
        nodes.push(marker("\u2423", "U+0020 SPACE at the start or end of the name"));
      } else if ((lines && char === "\n") || !HIDDEN.test(char)) {
        plain += char;
      } else {
        flush();
        nodes.push(marker(escapeOf(char), `U+${codePoint(char)}: a character that is not shown as itself`));
      }
    });
    flush();
    return nodes;
  }

  // JSON for a text box, where nothing can be styled: hidden characters inside strings are
  // written as \u escapes, which JSON.parse reads back to the same characters.
  function jsonForEditing(value) {
    return JSON.stringify(value, null, 2).replace(HIDDEN_ALL, (char) =>
      char === "\n" ? char : Array.from({ length: char.length }, (_, i) =>
        `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`).join(""));
  }

  function readToken() {
    const fragment = window.location.hash.replace(/^#/, "");
    if (!fragment) return { token: null, present: false };
    // The token leaves the address bar and this tab's history before anything else: the
    // entry that held it is replaced by the same address without its fragment.
    window.history.replaceState(window.history.state, "", window.location.pathname + window.location.search);
    const token = new URLSearchParams(fragment).get("token");
    return { token: token && /^[A-Za-z0-9_\-.]+$/.test(token) ? token : null, present: true };
  }

  async function post(url, body) {
    let response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Pausetoken-CSRF": CSRF },
        body: JSON.stringify(body),
        credentials: "same-origin",
        cache: "no-store",
        referrerPolicy: "no-referrer",
      });
    } catch (error) {
      return { ok: false, status: 0, data: { code: "network_error" }, retryAfter: null };
    }
    let data = null;
    try {
      data = await response.json();
    } catch (error) {
      data = null;
    }
    const retryAfter = Number.parseInt(response.headers.get("Retry-After") || "", 10);
    return {
      ok: response.ok,
      status: response.status,
      data: data || {},
      retryAfter: Number.isFinite(retryAfter) ? retryAfter : null,
    };
  }

  function notice(tone, ...children) {
    return el("p", { class: `notice notice-${tone}`, role: tone === "error" ? "alert" : null }, ...children);
  }

  function button(text, onclick) {
    return el("div", { class: "actions" }, el("button", { type: "button", class: "button button-quiet", onclick }, text));
  }

  // -- refusals ----------------------------------------------------------------------------

  const INVALID_LINK = [
    "invalid",
    "Invalid link",
    "This approval link is not valid: it may be incomplete or altered. Ask for a new link.",
  ];
  const MISSING_LINK = [
    "missing",
    "Open your approval link",
    "This page has no approval link to read. Open the link you received again: once read, " +
      "the link is removed from the address bar, so reloading the page does not bring it back.",
  ];

  function refusal(result) {
    const code = result.data.code || "";
    if (result.status === 401 && code !== "not_authenticated") return INVALID_LINK;
    if (code === "unknown_interrupt" || code === "payload_mismatch") return INVALID_LINK;
    const known = {
      token_expired: ["expired", "Link expired", "This link has expired. Ask for a new one if the request is still open."],
      token_revoked: ["revoked", "Request withdrawn", "This request was withdrawn and can no longer be answered."],
      already_redeemed: ["answered", "Already answered", "This request has already been answered. Nothing more is needed."],
      stale_token: ["stale", "No longer waiting", "The task moved on and no longer waits for this answer."],
      checkpoint_not_found: ["stale", "No longer waiting", "The task this request belongs to no longer exists."],
      checkpoint_lost: ["stale", "No longer waiting", "The task this request belongs to can no longer be resumed."],
      scope_mismatch: ["forbidden", "Not available", "This request belongs to another account."],
      principal_mismatch: ["forbidden", "Not available", "This request is addressed to someone else."],
      not_authenticated: ["signin", "Sign in required", "Sign in, then open the link you received again."],
      csrf_invalid: ["reload", "Page expired", "This page is too old to answer from. Open the link you received again."],
      origin_refused: ["reload", "Page expired", "Open the link directly in your browser, then answer."],
      store_unavailable: ["unavailable", "Temporarily unavailable", "The service cannot record answers right now. Try again in a minute."],
      consume_unconfirmed: ["unavailable", "Answer not confirmed", "The service could not confirm your answer. Open the link you received again in a minute: it shows whether the answer was recorded."],
      network_error: ["unavailable", "Cannot reach the service", "Check your connection, then try again."],
    };
    return known[code] || ["error", "Something went wrong", `The request could not be completed (${code || result.status}).`];
  }

  // again(times): asks the server again (describe), as often as it was asked already.
  function showRefusal(result, again, times = 0) {
    if (result.data.code === "redemption_in_progress") {
      waitForOutcome(result, again, times);
      return;
    }
    const [state, title, text] = refusal(result);
    setState(state, title, notice(state === "answered" ? "info" : "error", text),
      state === "unavailable" ? button("Try again", () => again(0)) : null);
  }

  // Someone else's answer is being recorded: say so, and ask again after the server's
  // Retry-After (at most POLL_MAX_SECONDS later) until the outcome is known.
  function waitForOutcome(result, again, times) {
    if (times >= POLL_MAX_TIMES) {
      setState("in-progress", "Being answered",
        notice("info", "Someone is still answering this request. Check again later to see the outcome."),
        button("Check again", () => again(0)));
      return;
    }
    const seconds = Math.min(Math.max(result.retryAfter || 1, 1), POLL_MAX_SECONDS);
    setState("in-progress", "Being answered",
      notice("info", "Someone is answering this request right now. This page checks again in a " +
        "few seconds and shows the outcome: there is no need to reload it."),
      el("p", { class: "muted checking" }, el("span", { class: "spinner", "aria-hidden": "true" }),
        "Waiting for the outcome\u2026"));
    window.setTimeout(() => again(times + 1), seconds * 1000);
  }

  // -- what is asked -----------------------------------------------------------------------

  function kindLabel(name) {
    if (Object.hasOwn(KIND_LABELS, name)) return KIND_LABELS[name];
    const words = String(name).split(/[._:-]+/).filter(Boolean).join(" ");
    return words ? words.charAt(0).toUpperCase() + words.slice(1) : String(name);
  }

  function formatExpiry(iso) {
    const when = new Date(iso);
    if (Number.isNaN(when.getTime())) return String(iso);
    return new Intl.DateTimeFormat(undefined, {
      year: "numeric",
      month: "long",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
      timeZoneName: "short",
    }).format(when);
  }

  // LangChain's default description ends with the tool's name and its arguments as Python
  // prints them ("Tool: send_email\nArgs: {'to': ...}"): the page shows both already, so
  // only the words before them are kept.
  function readableDescription(description, name) {
    if (typeof description !== "string") return null;
    const found = /^([\s\S]*?)\n\nTool: ([^\n]*)\nArgs: [\s\S]*$/.exec(description);
    const text = found && found[2] === name ? found[1] : description;
    return text.trim() || null;
  }

  // A text for messages and summaries, hidden characters written as escapes.
  function escapedText(text) {
    return [...String(text)].map((char) => (HIDDEN.test(char) ? escapeOf(char) : char)).join("");
  }

  function valueNode(value) {
    if (value === "") return el("span", { class: "value-text" }, marker("(empty)", "An empty text"));
    if (typeof value === "string") return el("span", { class: "value-text" }, ...reveal(value, { lines: true }));
    if (value !== null && typeof value === "object") {
      return el("pre", { class: "code" }, ...reveal(JSON.stringify(value, null, 2), { lines: true }));
    }
    return el("code", { class: "value-json" }, JSON.stringify(value));
  }

  // Names exactly as sent: no case change, no "_" or "-" made into spaces, so that two
  // different names never look alike.
  function fieldsTable(object) {
    const rows = Object.entries(object || {}).map(([key, value]) =>
      el("tr", {}, el("th", { scope: "row", class: "name" }, ...reveal(key, { edges: true })),
        el("td", {}, valueNode(value))),
    );
    return rows.length ? el("table", { class: "fields" }, el("tbody", {}, ...rows)) : el("p", { class: "muted", text: "No arguments." });
  }

  function actionsOf(payload) {
    if (Array.isArray(payload.action_requests) && Array.isArray(payload.review_configs)) {
      const actions = payload.action_requests.map((request) => {
        const config = payload.review_configs.find((c) => c.action_name === request.name) || {};
        return { name: request.name, args: request.args || {}, description: request.description, allowed: config.allowed_decisions || [] };
      });
      return { actions, wrap: (decisions) => ({ decisions }) };
    }
    if (payload.type === "tool_approval" && typeof payload.name === "string") {
      const allowed = payload.allowed_decisions || ["approve", "edit", "reject"];
      return { actions: [{ name: payload.name, args: payload.args || {}, description: payload.description, allowed }], wrap: (d) => d[0] };
    }
    if (payload.action && typeof payload.action.name === "string" && Array.isArray(payload.allowed_decisions)) {
      const action = { name: payload.action.name, args: payload.action.args || {}, description: payload.description, allowed: payload.allowed_decisions };
      return { actions: [action], wrap: (d) => d[0] };
    }
    return null;
  }

  function decisionControl(action, index) {
    const group = `decision-${index}`;
    const details = el("div", { class: "details" });
    const shownName = escapedText(action.name);
    let chosen = null;
    const argsBox = el("textarea", { class: "input code", rows: "6", "aria-label": "Edited arguments", spellcheck: "false" });
    argsBox.value = jsonForEditing(action.args);
    const message = el("textarea", { class: "input", rows: "3", "aria-label": "Message" });

    function choose(type) {
      chosen = type;
      details.replaceChildren();
      if (type === "edit") details.append(el("label", { class: "label", text: "Arguments (JSON)" }), argsBox);
      if (type === "reject") {
        message.placeholder = "Why? (optional)";
        details.append(el("label", { class: "label", text: "Message" }), message);
      }
      if (type === "respond") {
        message.placeholder = "Your reply";
        details.append(el("label", { class: "label", text: "Message" }), message);
      }
    }

    const options = action.allowed.filter((type) => type in DECISION_LABELS).map((type) =>
      el("label", { class: `option option-${type}` },
        el("input", { type: "radio", name: group, value: type, onchange: () => choose(type) }),
        el("span", { class: "option-text" },
          el("strong", { text: DECISION_LABELS[type] }),
          el("small", { text: DECISION_HINTS[type] }))),
    );
    const description = readableDescription(action.description, action.name);
    const block = el("section", { class: "action" },
      el("h2", { class: "action-name" }, el("span", { class: "badge", text: "Action" }), ...reveal(action.name)),
      description ? el("p", { class: "description" }, ...reveal(description, { lines: true })) : null,
      fieldsTable(action.args),
      el("fieldset", { class: "options" }, el("legend", { text: "Your decision" }), ...options),
      details);

    function value() {
      if (chosen === null) throw new Error(`Choose a decision for ${shownName}.`);
      if (chosen === "approve") return { type: "approve" };
      if (chosen === "edit") {
        let args;
        try {
          args = JSON.parse(argsBox.value);
        } catch (error) {
          throw new Error(`The arguments of ${shownName} are not valid JSON.`);
        }
        return { type: "edit", edited_action: { name: action.name, args } };
      }
      if (chosen === "respond") {
        if (!message.value.trim()) throw new Error("Write the message to send back.");
        return { type: "respond", message: message.value };
      }
      return message.value.trim() ? { type: "reject", message: message.value } : { type: "reject" };
    }
    return { block, value, summary: () => DECISION_LABELS[chosen] };
  }

  function questionControl(question, index) {
    const multi = Boolean(question.multi_select);
    const group = `question-${index}`;
    const other = el("input", { type: "text", class: "input", placeholder: "Other answer", "aria-label": "Other answer" });
    const options = (question.options || []).map((option) =>
      el("label", { class: "option" },
        el("input", { type: multi ? "checkbox" : "radio", name: group, value: option.label }),
        el("span", { class: "option-text" }, el("strong", {}, ...reveal(option.label)),
          option.description ? el("small", {}, ...reveal(option.description, { lines: true })) : null)));
    const asked = question.question || question.text || "";
    const block = el("section", { class: "action" },
      question.header ? el("span", { class: "badge" }, ...reveal(question.header)) : null,
      el("h2", { class: "question" }, ...reveal(asked, { lines: true })),
      el("fieldset", { class: "options" }, el("legend", { text: multi ? "Choose any" : "Choose one" }), ...options,
        question.allow_other ? other : null));
    const selected = () => [...block.querySelectorAll(`input[name="${group}"]:checked`)].map((i) => i.value);
    function value() {
      const answer = { question_id: question.id, selected: selected() };
      if (question.allow_other && other.value.trim()) answer.other = other.value;
      if (!answer.selected.length && !answer.other) throw new Error(`Answer: ${escapedText(asked || question.id)}`);
      return answer;
    }
    return { block, value, summary: () => escapedText(selected().join(", ") || other.value) };
  }

  function form(described, token) {
    const payload = described.payload;
    const error = el("div", { class: "form-error" });
    let controls;
    let build;
    const asked = payload && typeof payload === "object" ? actionsOf(payload) : null;
    if (asked) {
      controls = asked.actions.map(decisionControl);
      build = () => asked.wrap(controls.map((c) => c.value()));
    } else if (payload && Array.isArray(payload.questions)) {
      controls = payload.questions.map(questionControl);
      build = () => ({ answers: controls.map((c) => c.value()) });
    } else {
      const box = el("textarea", { class: "input code", rows: "5", "aria-label": "Answer (JSON)", spellcheck: "false" });
      box.value = "{}";
      const shown = payload && typeof payload === "object" && !Array.isArray(payload)
        ? fieldsTable(payload) : valueNode(payload);
      controls = [{
        block: el("section", { class: "action" }, shown, el("label", { class: "label", text: "Your answer (JSON)" }), box),
        value: () => {
          try {
            return JSON.parse(box.value);
          } catch (e) {
            throw new Error("The answer is not valid JSON.");
          }
        },
        summary: () => "",
      }];
      build = () => controls[0].value();
    }
    const label = asked ? "Send decision" : "Send answer";
    const submit = el("button", { type: "submit", class: "button" }, label);
    const element = el("form", { class: "answer-form", novalidate: true },
      ...controls.map((c) => c.block), error, el("div", { class: "actions" }, submit));
    // A message about the last attempt goes as soon as the answer changes.
    element.addEventListener("input", () => error.replaceChildren());
    element.addEventListener("submit", async (event) => {
      event.preventDefault();
      error.replaceChildren();
      let answer;
      try {
        answer = build();
      } catch (problem) {
        error.append(notice("error", problem.message));
        return;
      }
      submit.disabled = true;
      submit.textContent = "Sending\u2026";
      const result = await post(ANSWER_URL, { token, answer });
      submit.disabled = false;
      submit.textContent = label;
      if (result.ok) {
        const summary = controls.map((c) => c.summary()).filter(Boolean).join("; ");
        const text = result.data.replayed
          ? "This answer had already been recorded; nothing was done twice."
          : `Your ${asked ? "decision" : "answer"} was recorded and the task has resumed.`;
        setState("done", asked ? "Decision recorded" : "Answer recorded", notice("success", text),
          summary ? el("p", { class: "summary" }, el("span", { class: "muted", text: asked ? "Your decision: " : "Your answer: " }), el("strong", { text: summary })) : null,
          el("p", { class: "muted", text: "You can close this page." }));
        return;
      }
      if (result.status === 422) {
        error.append(notice("error", result.data.detail || "The answer was not accepted; correct it and send it again."));
        return;
      }
      showRefusal(result, (times) => describe(token, times));
    });
    return element;
  }

  function showForm(described, token, afterWaiting) {
    const payload = described.payload;
    const asksActions = payload && typeof payload === "object" && actionsOf(payload) !== null;
    setState("pending", asksActions ? "Your decision is needed" : "Your answer is needed",
      afterWaiting ? notice("info", "The other answer was not recorded: this request still waits for one.") : null,
      el("p", { class: "meta" },
        el("span", { class: "badge badge-muted kind", title: String(described.name), text: kindLabel(described.name) }),
        el("span", { class: "muted expiry" }, "Link valid until ",
          el("time", { datetime: String(described.expires_at), text: formatExpiry(described.expires_at) }))),
      form(described, token));
  }

  // times: how often the page has already asked while someone else's answer was recorded.
  async function describe(token, times = 0) {
    const result = await post(DESCRIBE_URL, { token });
    if (!result.ok) {
      showRefusal(result, (next) => describe(token, next), times);
      return;
    }
    showForm(result.data, token, times > 0);
  }

  function start() {
    const { token, present } = readToken();
    if (!token) {
      const [state, title, text] = present ? INVALID_LINK : MISSING_LINK;
      setState(state, title, notice("error", text));
      return;
    }
    describe(token);
  }

  // Another link pasted into this tab: the page starts again with it.
  window.addEventListener("hashchange", () => window.location.reload());
  start();
})();
