"""An HTTP request's spooled answers (graphmem.spliced_answers): handed to the SDK as stand-ins,
and every one not written freed when the request ends."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from graphmem.spliced_answers import SLOT_KEY, STRUCTURED_KEY, TEXT_STAND_IN, AnswerSlot, slot_of
from graphmem.tools.base import ToolOutcome
from graphmem.tools.graph_body import GraphBody


def spooled() -> tuple[ToolOutcome, GraphBody]:
    body = GraphBody.spill([], [("a", "b", "knows")], in_memory_bytes=0)
    return ToolOutcome(texts=[], body=body), body


def is_closed(body: GraphBody) -> bool:
    try:
        list(body.structured_pieces())
    except ValueError:  # I/O on a closed file
        return True
    return False


def test_a_stand_in_names_a_token_whose_body_the_slot_keeps_until_taken() -> None:
    slot = AnswerSlot()
    outcome, body = spooled()
    wire = slot.stand_in(outcome)
    token = wire["structuredContent"][STRUCTURED_KEY]
    assert wire["content"] == [{"type": "text", "text": TEXT_STAND_IN + token}]
    assert "isError" not in wire
    assert slot.take(token) is body and slot.take(token) is None
    slot.close()
    assert not is_closed(body), "a body taken is the taker's to close"
    body.close()


def test_two_answers_get_different_tokens() -> None:
    slot = AnswerSlot()
    first, second = (slot.stand_in(spooled()[0]) for _ in range(2))
    assert first["structuredContent"] != second["structuredContent"]
    slot.close()


def test_the_bodies_not_written_when_the_request_ends_are_closed() -> None:
    slot = AnswerSlot()
    outcome, body = spooled()
    slot.stand_in(outcome)
    slot.close()
    assert is_closed(body) and not slot.bodies


def test_an_answer_made_after_its_request_ended_is_closed_at_once() -> None:
    slot = AnswerSlot()
    slot.close()
    outcome, body = spooled()
    slot.stand_in(outcome)
    assert is_closed(body) and not slot.bodies


@pytest.mark.parametrize(
    "request_object",
    [None, object(), SimpleNamespace(scope={}), SimpleNamespace(scope={SLOT_KEY: "x"})],
)
def test_a_request_without_a_slot_has_none(request_object: object) -> None:
    assert slot_of(request_object) is None


def test_a_request_through_the_splicer_has_its_slot() -> None:
    slot = AnswerSlot()
    assert slot_of(SimpleNamespace(scope={SLOT_KEY: slot})) is slot
