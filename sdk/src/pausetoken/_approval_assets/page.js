// The approval page's script. It reads the token from the URL fragment (never sent to the
// server in the address), asks the server what the token asks, offers exactly the allowed
// decisions or options, and posts the answer. Everything is built with DOM calls and
// textContent: nothing from the payload is ever parsed as HTML.
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
    content.replaceChildren(...children);
  }

  function readToken() {
    const fragment = window.location.hash.replace(/^#/, "");
    const token = new URLSearchParams(fragment).get("token");
    return token && /^[A-Za-z0-9_\-.]+$/.test(token) ? token : null;
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
      return { ok: false, status: 0, data: { code: "network_error" } };
    }
    let data = null;
    try {
      data = await response.json();
    } catch (error) {
      data = null;
    }
    return { ok: response.ok, status: response.status, data: data || {} };
  }

  function notice(tone, text) {
    return el("p", { class: `notice notice-${tone}`, role: tone === "error" ? "alert" : null }, text);
  }

  // -- refusals ----------------------------------------------------------------------------

  const INVALID_LINK = [
    "invalid",
    "Invalid link",
    "This approval link is not valid: it may be incomplete or altered. Ask for a new link.",
  ];

  function refusal(result) {
    const code = result.data.code || "";
    if (result.status === 401 && code !== "not_authenticated") return INVALID_LINK;
    if (code === "unknown_interrupt" || code === "payload_mismatch") return INVALID_LINK;
    const known = {
      token_expired: ["expired", "Link expired", "This link has expired. Ask for a new one if the request is still open."],
      token_revoked: ["revoked", "Request withdrawn", "This request was withdrawn and can no longer be answered."],
      already_redeemed: ["answered", "Already answered", "This request has already been answered. Nothing more is needed."],
      redemption_in_progress: ["in-progress", "Being answered", "Someone is answering this request right now. Reload in a moment to see the outcome."],
      stale_token: ["stale", "No longer waiting", "The task moved on and no longer waits for this answer."],
      checkpoint_not_found: ["stale", "No longer waiting", "The task this request belongs to no longer exists."],
      checkpoint_lost: ["stale", "No longer waiting", "The task this request belongs to can no longer be resumed."],
      scope_mismatch: ["forbidden", "Not available", "This request belongs to another account."],
      principal_mismatch: ["forbidden", "Not available", "This request is addressed to someone else."],
      not_authenticated: ["signin", "Sign in required", "Sign in, then open the link again."],
      csrf_invalid: ["reload", "Page expired", "This page is too old to answer from. Reload it."],
      origin_refused: ["reload", "Page expired", "Open the link directly in your browser, then answer."],
      store_unavailable: ["unavailable", "Temporarily unavailable", "The service cannot record answers right now. Try again in a minute."],
      network_error: ["unavailable", "Cannot reach the service", "Check your connection and reload the page."],
    };
    return known[code] || ["error", "Something went wrong", `The request could not be completed (${code || result.status}).`];
  }

  function showRefusal(result) {
    const [state, title, text] = refusal(result);
    setState(state, title, notice(state === "answered" ? "info" : "error", text));
  }

  // -- what is asked -----------------------------------------------------------------------

  function pretty(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function label(key) {
    const words = key.replace(/[_-]+/g, " ").trim();
    return words.charAt(0).toUpperCase() + words.slice(1);
  }

  function fieldsTable(object) {
    const rows = Object.entries(object || {}).map(([key, value]) =>
      el("tr", {}, el("th", { scope: "row", text: label(key) }),
        el("td", {}, typeof value === "object" && value !== null
          ? el("pre", { class: "code", text: pretty(value) })
          : String(value))),
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
    let chosen = null;
    const argsBox = el("textarea", { class: "input code", rows: "6", "aria-label": "Edited arguments", spellcheck: "false" });
    argsBox.value = JSON.stringify(action.args, null, 2);
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
    const block = el("section", { class: "action" },
      el("h2", { class: "action-name" }, el("span", { class: "badge", text: "Action" }), action.name),
      action.description ? el("p", { class: "description", text: action.description }) : null,
      fieldsTable(action.args),
      el("fieldset", { class: "options" }, el("legend", { text: "Your decision" }), ...options),
      details);

    function value() {
      if (chosen === null) throw new Error(`Choose a decision for ${action.name}.`);
      if (chosen === "approve") return { type: "approve" };
      if (chosen === "edit") {
        let args;
        try {
          args = JSON.parse(argsBox.value);
        } catch (error) {
          throw new Error(`The arguments of ${action.name} are not valid JSON.`);
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
        el("span", { class: "option-text" }, el("strong", { text: option.label }),
          option.description ? el("small", { text: option.description }) : null)));
    const block = el("section", { class: "action" },
      question.header ? el("span", { class: "badge", text: question.header }) : null,
      el("h2", { class: "question", text: question.question || question.text || "" }),
      el("fieldset", { class: "options" }, el("legend", { text: multi ? "Choose any" : "Choose one" }), ...options,
        question.allow_other ? other : null));
    function value() {
      const selected = [...block.querySelectorAll(`input[name="${group}"]:checked`)].map((i) => i.value);
      const answer = { question_id: question.id, selected };
      if (question.allow_other && other.value.trim()) answer.other = other.value;
      if (!selected.length && !answer.other) throw new Error(`Answer: ${question.question || question.id}`);
      return answer;
    }
    return { block, value, summary: () => [...block.querySelectorAll(`input[name="${group}"]:checked`)].map((i) => i.value).join(", ") || other.value };
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
        ? fieldsTable(payload) : el("pre", { class: "code", text: pretty(payload) });
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
      submit.textContent = "Sending…";
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
      showRefusal(result);
    });
    return element;
  }

  async function start() {
    const token = readToken();
    if (!token) {
      setState(...INVALID_LINK.slice(0, 2), notice("error", INVALID_LINK[2]));
      return;
    }
    const result = await post(DESCRIBE_URL, { token });
    if (!result.ok) {
      showRefusal(result);
      return;
    }
    const described = result.data;
    const expires = new Date(described.expires_at);
    const payload = described.payload;
    const asksActions = payload && typeof payload === "object" && actionsOf(payload) !== null;
    setState("pending", asksActions ? "Your decision is needed" : "Your answer is needed",
      el("p", { class: "meta" }, el("span", { class: "badge badge-muted", text: described.name }),
        el("span", { class: "muted", text: ` Link valid until ${expires.toLocaleString()}` })),
      form(described, token));
  }

  window.addEventListener("hashchange", () => window.location.reload());
  start();
})();
