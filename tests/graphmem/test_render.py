"""Tool text is the official server's JSON.stringify(value, null, 2), byte for byte."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from graphmem.tools.base import render

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def reference(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def test_the_empty_graph_renders_like_the_official_server() -> None:
    assert render({"entities": [], "relations": []}) == '{\n  "entities": [],\n  "relations": []\n}'


@given(json_values)
def test_render_matches_json_dumps_with_indent_2(value: Any) -> None:
    try:
        expected = reference(value)
        expected.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates never reach render: inputs are checked
        return
    assert render(value) == expected
