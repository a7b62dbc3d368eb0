"""The graph family's tunables: the contract's defaults, and config.json deep-merged over them
key by key, each unusable key warned about by its path without costing the others."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from actors.graph_tunables import DEFAULT_RATE_KEY, UNIT, Range, Tunables, merge_tunables
from projections.naming import is_type_name


def test_the_defaults_are_the_contracts() -> None:
    tunables = Tunables()
    weights, decay, query = tunables.weights, tunables.decay, tunables.query
    assert (weights.explicit_statement, weights.inferred, weights.from_memory_file) == (
        0.7,
        0.3,
        0.5,
    )
    assert (weights.boost_on_confirm, weights.boost_on_mention, weights.weaken_on_correct) == (
        0.15,
        0.05,
        0.3,
    )
    assert weights.project_context_boost == 0.10
    assert dict(decay.rates) == {
        "person": 0.998,
        "project": 0.995,
        "preference": 0.999,
        "concept": 0.999,
        "decision": 0.997,
        "fact": 0.996,
        "event": 0.993,
        "object": 0.996,
        "reasoning": 0.996,
        "default": 0.996,
    }
    assert (decay.edge_rate, decay.floor) == (0.997, 0.01)
    assert (decay.prune_node_threshold, decay.prune_edge_threshold) == (0.1, 0.05)
    assert (decay.prune_orphan_days, decay.stale_confidence, decay.stale_days) == (30, 0.2, 90)
    assert (query.default_max_hops, query.default_min_weight, query.default_limit) == (2, 0.3, 20)
    assert query.cypher_timeout_ms == 5000
    assert (tunables.affinity.hop_1_multiplier, tunables.affinity.hop_2_multiplier) == (1.3, 1.15)
    dream = tunables.dream
    assert (dream.cooldown_hours, dream.max_transcripts_per_run, dream.chunk_size_lines) == (
        4,
        10,
        500,
    )


def test_decay_rates_match_types_case_insensitively_and_fall_back_to_the_default() -> None:
    decay = Tunables().decay
    assert decay.rate_for("Person") == decay.rate_for("PERSON") == 0.998
    assert decay.rate_for("Technology") == decay.rates[DEFAULT_RATE_KEY] == 0.996


def test_an_empty_document_gives_the_defaults_without_a_warning() -> None:
    assert merge_tunables({}) == (Tunables(), [])


def test_overrides_merge_into_their_section_leaving_its_other_keys_alone() -> None:
    tunables, warnings = merge_tunables(
        {"weights": {"boost_on_mention": 0.1}, "decay": {"rates": {"Technology": 0.99}}}
    )
    assert warnings == []
    assert tunables.weights.boost_on_mention == 0.1
    assert tunables.weights.boost_on_confirm == 0.15
    assert tunables.decay.rate_for("technology") == 0.99
    assert tunables.decay.rate_for("Person") == 0.998


def test_one_bad_key_keeps_its_default_and_every_other_override() -> None:
    tunables, warnings = merge_tunables(
        {
            "weights": {"boost_on_mention": "a lot", "boost_on_confirm": 0.2},
            "query": {"default_limit": 50},
        }
    )
    assert tunables.weights.boost_on_mention == 0.05
    assert tunables.weights.boost_on_confirm == 0.2
    assert tunables.query.default_limit == 50
    assert len(warnings) == 1 and "weights.boost_on_mention" in warnings[0]


def test_weights_and_rates_outside_zero_to_one_are_clamped_with_a_warning() -> None:
    tunables, warnings = merge_tunables(
        {"weights": {"weaken_on_correct": 1.4}, "decay": {"rates": {"Event": -0.5}}}
    )
    assert tunables.weights.weaken_on_correct == 1.0
    assert tunables.decay.rate_for("Event") == 0.0
    assert warnings == [
        "weights.weaken_on_correct = 1.4 is outside [0, 1]; clamped to 1.0",
        "decay.rates.Event = -0.5 is outside [0, 1]; clamped to 0.0",
    ]


def test_a_whole_number_tunable_refuses_a_fraction_and_clamps_a_whole_one() -> None:
    tunables, warnings = merge_tunables({"query": {"default_max_hops": 9, "default_limit": 2.5}})
    assert tunables.query.default_max_hops == 4
    assert tunables.query.default_limit == 20
    assert [w.split(" ")[0] for w in warnings] == ["query.default_max_hops", "query.default_limit"]


def test_booleans_null_strings_and_huge_integers_are_judged_without_crashing() -> None:
    tunables, warnings = merge_tunables(
        {
            "decay": {
                "floor": True,
                "edge_rate": None,
                "stale_days": "90",
                "prune_orphan_days": 10**400,
            }
        }
    )
    assert tunables.decay.floor == 0.01
    assert tunables.decay.edge_rate == 0.997
    assert tunables.decay.stale_days == 90
    assert tunables.decay.prune_orphan_days == 36_500
    assert len(warnings) == 4


def test_unknown_keys_and_sections_are_warned_about_and_ignored() -> None:
    tunables, warnings = merge_tunables(
        {"wieghts": {}, "query": {"max_hop": 3}, "neo4j": {"uri": 1}}
    )
    assert tunables == Tunables()
    assert len(warnings) == 2
    assert warnings[0].startswith("wieghts is not a tunable")
    assert warnings[1].startswith("query.max_hop is not a tunable")


def test_a_section_or_document_of_the_wrong_kind_keeps_its_defaults() -> None:
    assert merge_tunables([1, 2])[0] == Tunables()
    tunables, warnings = merge_tunables({"weights": [0.5], "decay": {"rates": 0.9}})
    assert tunables == Tunables()
    assert warnings[0].startswith("weights is an array")
    assert warnings[1].startswith("decay.rates is the number 0.9")


# --- any document --------------------------------------------------------------------------

_SECTION_FIELDS = {
    f.name: {g.name: g for g in fields(getattr(Tunables(), f.name))} for f in fields(Tunables)
}
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def documents(draw: st.DrawFn) -> Any:
    def section(name: str) -> Any:
        keys = st.sampled_from(sorted(_SECTION_FIELDS[name])) | st.text(max_size=8)
        numbers = st.integers(-3, 300) | st.floats(-2.0, 2.0)
        overrides = draw(st.dictionaries(keys, numbers | json_values, max_size=6) | json_values)
        if name == "decay" and isinstance(overrides, dict) and draw(st.booleans()):
            type_names = st.sampled_from(["Person", "person", "Technology", "1bad", ""])
            rates = st.dictionaries(type_names | st.text(max_size=6), numbers | json_leaves)
            overrides["rates"] = draw(rates | json_values)
        return overrides

    names = draw(
        st.lists(
            st.sampled_from(sorted(_SECTION_FIELDS)) | st.text(max_size=8), max_size=6, unique=True
        )
    )
    document = {
        name: section(name) if name in _SECTION_FIELDS else draw(json_values) for name in names
    }
    return draw(st.just(document) | json_values)


def _good_number(value: Any, within: Range) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float):
        return math.isfinite(value) and (value.is_integer() or not within.whole)
    return True


def _warned(path: str, warnings: list[str]) -> bool:
    return any(w.startswith((f"{path} ", f"{path}:")) for w in warnings)


def _check_rates(overrides: Any, got: Any, warnings: list[str]) -> None:
    if not isinstance(overrides, dict):
        assert _warned("decay.rates", warnings)
        assert dict(got.rates) == dict(Tunables().decay.rates)
        return
    expected = dict(Tunables().decay.rates)
    for name, value in overrides.items():
        path = f"decay.rates.{name}"
        valid_name = is_type_name(name)
        if valid_name and _good_number(value, UNIT):
            expected[name.casefold()] = float(min(max(value, 0.0), 1.0))
            assert _warned(path, warnings) == (not 0.0 <= value <= 1.0)
        else:
            assert _warned(path, warnings)
    assert dict(got.rates) == expected


def _check_leaf(
    path: str, value: Any, within: Range, got: Any, default: Any, warnings: list[str]
) -> None:
    warned = _warned(path, warnings)
    if _good_number(value, within):
        expected = min(max(value, within.low), within.high)
        assert got == expected
        assert warned == (expected != value)
    else:
        assert got == default
        assert warned


@given(documents())
def test_any_document_gives_valid_tunables_and_a_warning_for_each_key_it_could_not_use(
    document: Any,
) -> None:
    tunables, warnings = merge_tunables(document)
    defaults = Tunables()

    for section_name, specs in _SECTION_FIELDS.items():
        section = getattr(tunables, section_name)
        for name, spec in specs.items():
            if name == "rates":
                assert all(0.0 <= rate <= 1.0 for rate in section.rates.values())
                assert DEFAULT_RATE_KEY in section.rates
                continue
            value, within = getattr(section, name), spec.metadata["range"]
            assert within.low <= value <= within.high
            assert isinstance(value, int if within.whole else float)
    if not isinstance(document, dict):
        assert tunables == defaults and len(warnings) == 1
        return
    for section_name, overrides in document.items():
        if section_name == "neo4j":
            continue
        if section_name not in _SECTION_FIELDS or not isinstance(overrides, dict):
            assert _warned(section_name, warnings)
            if section_name in _SECTION_FIELDS:
                assert getattr(tunables, section_name) == getattr(defaults, section_name)
            continue
        section, default_section = getattr(tunables, section_name), getattr(defaults, section_name)
        for name, value in overrides.items():
            path = f"{section_name}.{name}"
            spec = _SECTION_FIELDS[section_name].get(name)
            if spec is None:
                assert _warned(path, warnings)
            elif name == "rates":
                _check_rates(value, section, warnings)
            else:
                within = spec.metadata["range"]
                _check_leaf(
                    path,
                    value,
                    within,
                    getattr(section, name),
                    getattr(default_section, name),
                    warnings,
                )
