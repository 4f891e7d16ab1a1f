"""The choice of company every chat platform offers: while a company run's name fits more than
one company, its message asks which one and offers each as a button, and once the identity is
settled it says which one is researched. Here are the words and how the two events fold into
the status; Slack and Discord render them (bot/adapters/slack/choice.py,
bot/adapters/discord/choice.py)."""

from __future__ import annotations

from bot.adapters.chat.sink import StatusView
from bot.agent.events import IdentityOffered, IdentitySettled
from bot.runs.identify import duration

QUESTION = "Which company did you mean?"
REFINE = "None of these: refine"
WAITING = "Waiting for a choice of company"
"""The status while the run waits."""
RESEARCHING = "Researching"


def choice_prompt(view: StatusView) -> str:
    """Under the question: what a press does, and what happens without one."""
    return (
        "The name fits more than one company. Research starts on the one chosen; without a "
        f"choice within {duration(view.choose_within_s)}, it goes on with the first."
    )


def fold_identity(view: StatusView, event: IdentityOffered | IdentitySettled) -> None:
    """An offer puts the candidates on the message; a settled identity takes them away and
    leaves its note in their place."""
    if isinstance(event, IdentityOffered):
        view.candidates = list(event.candidates)
        view.choose_within_s = event.timeout_s
        view.state = WAITING
        return
    view.candidates = []
    view.identity = event.note
    if view.state == WAITING:
        view.state = RESEARCHING


def offers_choice(view: StatusView) -> bool:
    """The message shows the candidates' buttons now."""
    return bool(view.candidates) and not view.finished
