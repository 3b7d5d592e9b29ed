"""The approval page in real headless Chromium (Debian's package, driven by Playwright).

Render, decide, the run resumes, reopening the link says it was answered, a tampered
fragment says the link is invalid. Each state's screenshot is written to docs/images/ for
the approval page's documentation. Under CI a missing Chromium fails the test.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest
from asgi_support import ACME, App, Decision, make_app, serve_in_thread

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
    # The page down to its footer: no empty viewport below a short state.
    bottom = page.evaluate("document.querySelector('.footer').getBoundingClientRect().bottom")
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
    assert "pausetoken.approval" in page.locator(".meta").inner_text()
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
    assert "Order id\torder-1" in page.locator(".fields").inner_text()
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
    page.wait_for_selector("body[data-state='invalid']", timeout=15_000)


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
