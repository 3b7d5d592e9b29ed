"""The approval page in real headless Chromium (Debian's package, driven by Playwright).

Render, decide, the run resumes, reopening the link says it was answered, a tampered
fragment says the link is invalid; the token leaves the address bar and history, hidden
characters are shown as escapes, and a pause being answered is watched until it settles.
Each state's screenshot is written to docs/images/ for the approval page's documentation.
Under CI a missing Chromium fails the test.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import httpx
import pytest
from asgi_support import ACME, AUTH, App, Decision, make_app, serve_in_thread, tool_call

from docs_blocks import ROOT
from pausetoken import TokenStatus

if TYPE_CHECKING:
    from collections.abc import Iterator

    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.slow

CHROMIUM: Final = Path("/usr/bin/chromium")
IMAGES: Final = ROOT / "docs" / "images"
ON_CI: Final = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# The service's clock stands still, so that the screenshots (which show when a link expires)
# are the same at every run.
NOW: Final = 1_800_000_000.0


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: apt-get install chromium"
        if ON_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield browser
        browser.close()


@pytest.fixture
def served() -> Iterator[tuple[str, App]]:
    def build() -> tuple[Any, App]:
        app = make_app(clock=lambda: NOW)
        app.loop = asyncio.get_running_loop()
        return app.router(page_title="Refund approval"), app

    with serve_in_thread(build) as found:
        yield found


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(
        viewport={"width": 820, "height": 900},
        locale="en-GB",
        timezone_id="UTC",
        # The test's API key: the router's authentication, as a browser session would be.
        extra_http_headers={"Authorization": "Bearer key-acme"},
    )
    page = context.new_page()
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    # No script error and no Content-Security-Policy violation on any page shown (Chromium
    # also reports each refusal the page expects, a 409 or a 401, as a failed load).
    expected = "Failed to load resource: the server responded with a status of"
    assert [error for error in errors if not error.startswith(expected)] == []


def shot(page: Page, name: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    # The page down to its footer (or card): no empty viewport below a short state.
    bottom = page.evaluate(
        "(document.querySelector('.footer') || document.querySelector('.card'))"
        ".getBoundingClientRect().bottom"
    )
    clip = {"x": 0, "y": 0, "width": 820, "height": int(bottom) + 32}
    page.screenshot(
        path=str(IMAGES / f"approval-{name}.png"), clip=clip, full_page=True, animations="disabled"
    )


def open_link(page: Page, url: str, token: str, state: str) -> None:
    page.goto("about:blank")  # a fresh load, as opening the link again is
    page.goto(f"{url}/approve#token={token}")
    page.wait_for_selector(f"body[data-state='{state}']", timeout=15_000)


def test_a_person_approves_from_the_link_and_the_link_then_says_answered(
    page: Page, served: tuple[str, App], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    url, app = served
    token = app.call(app.mint("refund-42", kind="approval"))

    open_link(page, url, token, "pending")
    assert page.locator("h1").inner_text() == "Your decision is needed"
    # The kind as a person reads it, the expiry with its time zone (the service's clock).
    assert page.locator(".kind").inner_text() == "Approval"
    assert page.locator(".kind").get_attribute("title") == "pausetoken.approval"
    assert page.locator(".expiry").inner_text() == "Link valid until 16 January 2027 at 08:00 UTC"
    assert "issue_refund" in page.locator(".action-name").inner_text()
    assert "parcel arrived damaged" in page.locator(".fields").inner_text()
    offered = page.locator(".option strong").all_inner_texts()
    assert offered == ["Approve", "Edit and approve", "Reject"]  # respond is not allowed
    page.get_by_label("Approve", exact=False).first.check()
    shot(page, "pending")

    page.get_by_role("button", name="Send decision").click()
    page.wait_for_selector("body[data-state='done']", timeout=15_000)
    assert page.locator("h1").inner_text() == "Decision recorded"
    assert "Approve" in page.locator(".summary").inner_text()
    shot(page, "done")
    assert app.resumed == [("refund-42", {"type": "approve"})]
    assert app.call(app.tokens.status(token, scope=ACME)) is TokenStatus.REDEEMED

    open_link(page, url, token, "answered")
    assert page.locator("h1").inner_text() == "Already answered"
    shot(page, "already-answered")

    head, claims, signature = token.split(".")
    middle = len(claims) // 2
    flipped = "A" if claims[middle] != "A" else "B"
    tampered = f"{head}.{claims[:middle]}{flipped}{claims[middle + 1 :]}.{signature}"
    open_link(page, url, tampered, "invalid")
    assert page.locator("h1").inner_text() == "Invalid link"
    shot(page, "invalid-link")

    # The token travelled in fragments and bodies only: no log line holds it.
    assert [
        r for r in caplog.records if token in r.getMessage() or tampered in r.getMessage()
    ] == []
    assert any(r.name == "uvicorn.access" and "/approve" in r.getMessage() for r in caplog.records)


def test_an_edit_sends_the_edited_arguments_and_a_reject_its_message(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    edited = app.call(app.mint("edit-1", kind="tool_approval"))
    open_link(page, url, edited, "pending")
    page.locator("input[value='edit']").check()
    box = page.get_by_label("Edited arguments")
    box.fill('{"order_id": "A-1042", "amount": "21.00 EUR"}')
    box.blur()  # no focus ring or caret in the screenshot
    shot(page, "edit")
    page.get_by_role("button", name="Send decision").click()
    page.wait_for_selector("body[data-state='done']", timeout=15_000)

    rejected = app.call(app.mint("reject-1", kind="tool_approval"))
    open_link(page, url, rejected, "pending")
    page.locator("input[value='reject']").check()
    page.get_by_label("Message").fill("Customer already got a replacement.")
    page.get_by_role("button", name="Send decision").click()
    page.wait_for_selector("body[data-state='done']", timeout=15_000)

    assert app.resumed == [
        (
            "edit-1",
            {
                "type": "edit",
                "edited_action": {
                    "name": "issue_refund",
                    "args": {"order_id": "A-1042", "amount": "21.00 EUR"},
                },
            },
        ),
        ("reject-1", {"type": "reject", "message": "Customer already got a replacement."}),
    ]


def test_an_invalid_answer_keeps_the_form_and_a_revoked_or_missing_link_says_so(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    token = app.call(app.mint("generic-1"))
    open_link(page, url, token, "pending")
    # The refund kind is not a ready-made one: the page shows its fields and a JSON box.
    assert "order_id\torder-1" in page.locator(".fields").inner_text()
    assert page.locator(".kind").inner_text() == "Refund"
    page.get_by_label("Answer (JSON)").fill('{"approved": "perhaps"}')
    page.get_by_role("button", name="Send answer").click()
    page.wait_for_selector(".form-error .notice", timeout=15_000)
    assert page.locator("body").get_attribute("data-state") == "pending"
    page.get_by_label("Answer (JSON)").fill('{"approved": false}')
    page.get_by_role("button", name="Send answer").click()
    page.wait_for_selector("body[data-state='done']", timeout=15_000)
    assert app.resumed == [("generic-1", Decision(approved=False))]

    revoked = app.call(app.mint("revoked-1"))
    app.call(app.tokens.revoke(revoked, scope=ACME))
    open_link(page, url, revoked, "revoked")
    assert page.locator("h1").inner_text() == "Request withdrawn"
    shot(page, "revoked")

    page.goto(f"{url}/approve")
    page.wait_for_selector("body[data-state='missing']", timeout=15_000)
    assert page.locator("h1").inner_text() == "Open your approval link"


def test_questions_offer_their_options_and_send_the_selected_labels(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    token = app.call(app.mint("questions-1", kind="questions"))
    open_link(page, url, token, "pending")
    assert page.locator("h2.question").all_inner_texts() == [
        "Ship the order today?",
        "Which carriers may take it?",
    ]
    assert page.locator("input[name='question-0']").evaluate_all(
        "inputs => inputs.map(i => i.type)"
    ) == ["radio", "radio"]
    page.locator("input[name='question-0'][value='Yes']").check()
    page.locator("input[name='question-1'][value='Courier']").check()
    page.locator("input[name='question-1'][value='Pickup']").check()
    other = page.get_by_label("Other answer")
    other.fill("or a bike messenger")
    other.blur()
    shot(page, "questions")
    page.get_by_role("button", name="Send answer").click()
    page.wait_for_selector("body[data-state='done']", timeout=15_000)
    [(thread, answers)] = app.resumed
    assert thread == "questions-1"
    assert [(a.question_id, a.selected, a.other) for a in answers.answers] == [
        ("q1", ("Yes",), None),
        ("q2", ("Courier", "Pickup"), "or a bike messenger"),
    ]


def test_a_batched_review_offers_each_actions_decisions_and_sends_them_in_order(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    token = app.call(app.mint("batched-1", kind="batched"))
    open_link(page, url, token, "pending")
    assert page.locator(".action-name").all_inner_texts() == [
        "Actionsend_email",
        "Actionissue_refund",
    ]
    assert page.locator("input[name='decision-0']").evaluate_all(
        "inputs => inputs.map(i => i.value)"
    ) == ["approve", "respond"]
    assert page.locator("input[name='decision-1']").evaluate_all(
        "inputs => inputs.map(i => i.value)"
    ) == ["approve", "reject"]
    page.get_by_role("button", name="Send decision").click()
    page.wait_for_selector(".form-error .notice", timeout=15_000)
    assert "Choose a decision for send_email" in page.locator(".form-error").inner_text()
    page.locator("input[name='decision-0'][value='respond']").check()
    page.get_by_role("textbox", name="Message").fill("Say sorry first.")
    page.locator("input[name='decision-1'][value='approve']").check()
    shot(page, "batched")
    page.get_by_role("button", name="Send decision").click()
    page.wait_for_selector("body[data-state='done']", timeout=15_000)
    assert app.resumed == [
        (
            "batched-1",
            {
                "decisions": [
                    {"type": "respond", "message": "Say sorry first."},
                    {"type": "approve"},
                ]
            },
        )
    ]


def test_the_token_leaves_the_address_bar_history_and_referer(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    token = app.call(app.mint("private-1", kind="approval"))
    requests: list[Any] = []
    # A function of Python's own: Playwright cannot take a builtin method as a listener.
    page.on("request", lambda request: requests.append(request))  # noqa: PLW0108

    open_link(page, url, token, "pending")
    assert page.evaluate("location.hash") == ""
    assert page.evaluate("location.href") == f"{url}/approve"
    assert page.url == f"{url}/approve"
    # No entry of the tab's history holds it: back to the blank page, forward to the page.
    assert page.evaluate("history.length") == 2
    page.go_back()
    assert page.url == "about:blank"
    page.go_forward()
    assert token not in page.url
    page.wait_for_selector("body[data-state='missing']", timeout=15_000)
    # Reloading cannot bring the token back: the page says to open the link again.
    page.reload()
    page.wait_for_selector("body[data-state='missing']", timeout=15_000)
    assert page.locator("h1").inner_text() == "Open your approval link"
    assert page.evaluate("location.href") == f"{url}/approve"

    # No request the page made, for itself, its assets or the token, sent a Referer.
    sent = [request for request in requests if request.url.startswith(url)]
    assert {request.url.removeprefix(url) for request in sent} >= {
        "/approve",
        "/approve/page.js",
        "/approve/page.css",
        "/approve/describe",
    }
    for request in sent:
        # Playwright shows a Referer the browser left out as an empty one.
        assert request.all_headers().get("referer", "") == "", request.url
        assert token not in request.url
    assert page.evaluate("document.referrer") == ""
    assert app.call(app.tokens.status(token, scope=ACME)) is TokenStatus.ACTIVE


def test_a_link_with_the_token_in_the_query_gets_a_page_that_does_not_show_it(
    page: Page, served: tuple[str, App]
) -> None:
    url, _app = served
    # Not a real token: the server's access log records the query, which is why it is refused.
    token = "eyJhbGciOiJub25lIn0.bm90LWEtdG9rZW4.c2lnbmF0dXJl"
    response = page.goto(f"{url}/approve?token={token}")
    assert response is not None
    assert response.status == 400
    page.wait_for_selector("body[data-state='token-in-url']", timeout=15_000)
    assert page.locator("h1").inner_text() == "This link is not valid"
    assert token not in page.content()
    shot(page, "token-in-url")


# Names that differ only in case, "_" and "-", a space at an end or a zero-width character,
# and values whose bidi override or invisible characters would disguise them.
HOSTILE_ARGS: Final = {
    "amount": "\u202e00001",
    "Amount": "5",
    "amount_id": 1,
    "amount-id": "1",
    "amount ": "a space after the name",
    "amoun\u200bt": "a zero-width space inside the name",
    "note": "first line\nsecond line\u2028after a line separator",
    "iban": "DE89\u00a03704\u00a00044",
    "nested": {"to\u2066": ["x\u200dy"]},
}


def test_names_are_shown_verbatim_and_hidden_characters_as_escapes(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    payload = {**tool_call(), "name": "pay\u202eyrter", "args": HOSTILE_ARGS}
    token = app.call(app.mint("hostile-1", kind="tool_approval", payload=payload))
    open_link(page, url, token, "pending")

    # The server sends the members in code point order; each name is shown as it is.
    shown = {
        "amount": "amount",
        "Amount": "Amount",
        "amount_id": "amount_id",
        "amount-id": "amount-id",
        "amount ": "amount\u2423",
        "amoun\u200bt": "amoun\\u200bt",
        "note": "note",
        "iban": "iban",
        "nested": "nested",
    }
    names = page.locator(".fields th.name").all_inner_texts()
    assert names == [shown[name] for name in sorted(HOSTILE_ARGS)]
    assert len(set(names)) == len(HOSTILE_ARGS)
    rows = dict(zip(sorted(HOSTILE_ARGS), page.locator(".fields td").all(), strict=True))
    assert rows["amount"].inner_text() == "\\u202e00001"  # not "10000"
    assert rows["amount_id"].inner_text() == rows["amount-id"].inner_text() == "1"
    assert rows["amount_id"].locator("code.value-json").count() == 1  # a number
    assert rows["amount-id"].locator("code.value-json").count() == 0  # a text
    assert rows["note"].inner_text() == "first line\nsecond line\\u2028after a line separator"
    assert rows["iban"].inner_text() == "DE89\\u00a03704\\u00a00044"
    assert '"to\\u2066": [' in rows["nested"].inner_text()
    assert '"x\\u200dy"' in rows["nested"].inner_text()
    markers = page.locator(".hidden-char").all_inner_texts()
    assert markers.count("\\u202e") == 2  # the action's name and the amount
    assert "\\u200b" in markers
    # The marks are elements of their own: the text beside them is the text sent.
    assert page.locator(".action-name").inner_text() == "Actionpay\\u202eyrter"
    assert rows["amount"].locator(".hidden-char").all_inner_texts() == ["\\u202e"]
    shot(page, "hidden-characters")

    # The edit box writes them as JSON escapes, which read back to the same characters.
    page.locator("input[value='edit']").check()
    box = page.get_by_label("Edited arguments")
    assert "\\u202e00001" in box.input_value()
    assert "\u202e" not in box.input_value()
    page.get_by_role("button", name="Send decision").click()
    page.wait_for_selector("body[data-state='done']", timeout=15_000)
    assert app.resumed == [
        (
            "hostile-1",
            {"type": "edit", "edited_action": {"name": "pay\u202eyrter", "args": HOSTILE_ARGS}},
        )
    ]


def test_a_langchain_review_reads_as_words_not_as_python(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    token = app.call(app.mint("langchain-1", kind="langchain"))
    open_link(page, url, token, "pending")
    assert page.locator(".kind").inner_text() == "Tool call review"
    assert page.locator(".kind").get_attribute("title") == "langchain.review"
    # LangChain's default description without its "Args: {...}" in Python's spelling.
    assert page.locator(".description").all_inner_texts() == ["Tool execution requires approval"]
    assert "{'to'" not in page.locator("main").inner_text()
    shot(page, "langchain")


def answer_in_background(url: str, token: str) -> threading.Thread:
    """Send an answer over POST /resume from another thread: it waits on the app's gate."""

    def send() -> None:
        answer = {"type": "approve"}
        headers = {**AUTH, "Pause-Token": token}
        httpx.post(f"{url}/resume", json={"answer": answer}, headers=headers, timeout=60)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_a_pause_being_answered_is_watched_until_it_is_answered(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    token = app.call(app.mint("racing-1", kind="tool_approval"))
    gate = app.call(make_gate())
    app.gate = gate
    thread = answer_in_background(url, token)
    assert app.call(wait_started(app))

    open_link(page, url, token, "in-progress")
    assert page.locator("h1").inner_text() == "Being answered"
    assert "checks again" in page.locator(".notice").inner_text()
    shot(page, "in-progress")
    # Still being answered at the next check: the notice stays.
    page.wait_for_timeout(1_500)
    assert page.locator("body").get_attribute("data-state") == "in-progress"

    assert app.loop is not None
    app.loop.call_soon_threadsafe(gate.set)
    thread.join(30)
    page.wait_for_selector("body[data-state='answered']", timeout=15_000)
    assert page.locator("h1").inner_text() == "Already answered"
    assert app.resumed == [("racing-1", {"type": "approve"})]


def test_a_pause_whose_other_answer_fails_comes_back_to_the_form(
    page: Page, served: tuple[str, App]
) -> None:
    url, app = served
    token = app.call(app.mint("racing-2", kind="tool_approval"))
    gate = app.call(make_gate())
    app.gate = gate
    app.fail_with = RuntimeError("the run could not resume")
    thread = answer_in_background(url, token)
    assert app.call(wait_started(app))
    open_link(page, url, token, "in-progress")

    assert app.loop is not None
    app.loop.call_soon_threadsafe(gate.set)
    thread.join(30)
    page.wait_for_selector("body[data-state='pending']", timeout=15_000)
    assert "other answer was not recorded" in page.locator(".notice").first.inner_text()
    app.gate, app.fail_with = None, None
    page.locator("input[value='reject']").check()
    page.get_by_role("button", name="Send decision").click()
    page.wait_for_selector("body[data-state='done']", timeout=15_000)
    assert app.resumed == [("racing-2", {"type": "reject"})]


async def make_gate() -> asyncio.Event:
    return asyncio.Event()


async def wait_started(app: App) -> bool:
    await asyncio.wait_for(app.started.wait(), 30)
    return True
