"""The graph family's naming rules: slugs, ids, name resolution, type and relation spelling."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.naming import (
    EntityTypeError,
    MatchStep,
    NameIndex,
    RelationTypeError,
    entity_id,
    fold_name,
    is_type_name,
    normalise_entity_type,
    normalise_relation_type,
    relation_lookup_candidates,
    resolve,
    slug,
)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(char) + 0xFEE0) for char in text)


# --- slugs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Project X", "project-x"),
        ("under_score", "under-score"),
        ("  Alice  ", "alice"),
        ("a -- b", "a-b"),
        ("東京", "東京"),
        ("Zoë", "zoë"),
        (_fullwidth("Alice"), "alice"),  # NFKC folds full-width letters
        ("Straße", "strasse"),  # casefold, not lower
        ("½ cup", "1-2-cup"),
        ("v2.0", "v2-0"),
    ],
)
def test_a_slug_keeps_letters_and_digits_of_every_script(name: str, expected: str) -> None:
    assert slug(name) == expected


def test_a_name_without_letters_or_digits_gets_a_hash_slug() -> None:
    assert re.fullmatch(r"e-[0-9a-f]{10}", slug("???"))
    assert slug("???") != slug("!!!")
    assert slug("???") == slug("???")


def test_combining_marks_stay_with_the_letter_they_follow() -> None:
    # The contract's rule alone (letters and digits) cut words of scripts written with
    # combining vowel signs apart (हिन्दी became ह-न-द); a mark belongs to its letter.
    assert slug("हिन्दी") == "हिन्दी"
    assert slug("İstanbul") == "i\u0307stanbul"
    assert slug("a \u0301b") == "a-b"  # a mark after a separator is no letter's: it separates


@given(st.text())
def test_a_slug_is_its_own_slug_and_well_formed(name: str) -> None:
    key = slug(name)
    assert slug(key) == key
    assert key and not key.startswith("-") and not key.endswith("-") and "--" not in key


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_an_ascii_slug_is_upstreams_slug_when_upstreams_is_not_empty(name: str) -> None:
    upstream = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if upstream:
        assert slug(name) == upstream


@given(st.text())
def test_folding_is_idempotent_and_names_that_fold_alike_share_a_slug(name: str) -> None:
    folded = fold_name(name)
    assert fold_name(folded) == folded
    # A name without letters or digits has the hash of its own text as its slug.
    if any(unicodedata.category(char)[0] in "LN" for char in folded):
        assert slug(folded) == slug(name)


def test_folding_ignores_case_width_and_runs_of_whitespace() -> None:
    assert (
        fold_name("  Data \t Lake ")
        == fold_name("data lake")
        == fold_name(_fullwidth("DATA") + " LAKE")
    )


# --- ids ------------------------------------------------------------------------------------


def test_an_id_is_the_slug_unless_another_live_entity_shares_it() -> None:
    index = NameIndex([("Project X", ()), ("Data Lake", ()), ("data lake", ())])
    assert entity_id("Project X", index) == "project-x"
    assert entity_id("Data Lake", index) == "Data Lake"
    assert entity_id("data lake", index) == "data lake"
    index.remove("data lake")
    assert entity_id("Data Lake", index) == "data-lake"


@given(st.lists(st.text(min_size=1, max_size=8), max_size=12, unique=True))
def test_live_entities_never_share_an_id_and_each_id_resolves_to_its_entity(
    names: list[str],
) -> None:
    index = NameIndex((name, ()) for name in names)
    ids = [entity_id(name, index) for name in names]
    assert len(set(ids)) == len(ids)
    for name, key in zip(names, ids, strict=True):
        assert name in resolve(key, index).names


# --- resolution -----------------------------------------------------------------------------


def test_resolution_tries_exact_then_folded_then_alias_then_slug() -> None:
    index = NameIndex([("Alice", ("Ally",)), ("Project X", ()), ("Bob", ("alice smith",))])

    assert resolve("Alice", index) == resolve("Alice", index)
    assert resolve("Alice", index).step is MatchStep.EXACT
    assert (resolve("ALICE", index).names, resolve("ALICE", index).step) == (
        ("Alice",),
        MatchStep.FOLDED,
    )
    assert (resolve("ally", index).names, resolve("ally", index).step) == (
        ("Alice",),
        MatchStep.ALIAS,
    )
    assert (resolve("project-x", index).names, resolve("project-x", index).step) == (
        ("Project X",),
        MatchStep.SLUG,
    )
    assert (resolve("Alice  Smith", index).names, resolve("Alice  Smith", index).step) == (
        ("Bob",),
        MatchStep.ALIAS,
    )
    missing = resolve("Carol", index)
    assert (missing.found, missing.names, missing.step) == (False, (), None)


def test_an_exact_name_wins_over_a_case_insensitive_twin() -> None:
    index = NameIndex([("Data Lake", ()), ("data lake", ())])
    assert resolve("data lake", index).names == ("data lake",)
    ambiguous = resolve("DATA LAKE", index)
    assert ambiguous.ambiguous and ambiguous.names == ("Data Lake", "data lake")


def test_a_removed_entity_no_longer_resolves_by_any_step() -> None:
    index = NameIndex([("Alice", ("Ally",))])
    index.remove("Alice")
    for reference in ("Alice", "alice", "Ally", "alice"):
        assert not resolve(reference, index).found
    index.add("Alice", ())
    assert not resolve("Ally", index).found


_NAMES = st.text(alphabet="aAbB ßs-_1東", min_size=1, max_size=5)


@st.composite
def graphs_and_references(draw: st.DrawFn) -> tuple[dict[str, list[str]], str]:
    names = draw(st.lists(_NAMES, max_size=6, unique=True))
    graph = {name: draw(st.lists(_NAMES, max_size=2)) for name in names}
    known = [*names, *(alias for aliases in graph.values() for alias in aliases)]
    base = draw(st.sampled_from(known)) if known else draw(_NAMES)
    variant = draw(
        st.sampled_from([base, base.upper(), base.lower(), f" {base} ", slug(base), base + "x"])
    )
    return graph, variant


@settings(max_examples=300)
@given(graphs_and_references())
def test_resolution_matches_the_first_step_a_scan_of_the_graph_matches(
    case: tuple[dict[str, list[str]], str],
) -> None:
    graph, reference = case
    index = NameIndex(graph.items())
    folded = fold_name(reference)
    steps = [
        (MatchStep.EXACT, [n for n in graph if n == reference]),
        (MatchStep.FOLDED, [n for n in graph if fold_name(n) == folded]),
        (MatchStep.ALIAS, [n for n, aliases in graph.items() if folded in map(fold_name, aliases)]),
        (MatchStep.SLUG, [n for n in graph if slug(n) == slug(reference)]),
    ]
    expected = next(((step, tuple(sorted(found))) for step, found in steps if found), (None, ()))

    resolution = resolve(reference, index)

    assert (resolution.step, resolution.names) == expected


@given(graphs_and_references(), st.data())
def test_an_index_after_removals_answers_like_one_built_from_what_is_left(
    case: tuple[dict[str, list[str]], str], data: st.DataObject
) -> None:
    graph, reference = case
    index = NameIndex(graph.items())
    gone = data.draw(st.sets(st.sampled_from(sorted(graph))) if graph else st.just(set()))
    for name in gone:
        index.remove(name)
    rebuilt = NameIndex((n, a) for n, a in graph.items() if n not in gone)
    assert resolve(reference, index) == resolve(reference, rebuilt)


# --- types and relations --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("person", "Person"),
        (" PROJECT ", "Project"),
        ("Technology", "Technology"),
        ("Ort_2", "Ort_2"),
    ],
)
def test_entity_types_take_the_canonical_case_or_stay_as_given(raw: str, expected: str) -> None:
    assert normalise_entity_type(raw) == expected


@pytest.mark.parametrize("raw", ["", "2nd", "_x", "has space", "x" * 65, "a-b"])
def test_an_entity_type_that_is_not_a_type_name_is_refused_saying_what_is_allowed(
    raw: str,
) -> None:
    with pytest.raises(EntityTypeError, match="letters, digits and _"):
        normalise_entity_type(raw)


def test_type_names_may_use_letters_of_any_script() -> None:
    assert is_type_name("Persönlichkeit") and is_type_name("人物")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("works on", "WORKS_ON"),
        ("WORKS_ON", "WORKS_ON"),
        ("  depends-on ", "DEPENDS_ON"),
        ("part - of", "PART_OF"),
        ("v2 of", "V2_OF"),
    ],
)
def test_relation_names_are_written_in_one_spelling(raw: str, expected: str) -> None:
    assert normalise_relation_type(raw) == expected


@pytest.mark.parametrize("raw", ["WORKS ON!", "", "2_OF", "_X", "A" * 65, "a`b", "café"])
def test_a_relation_name_that_is_not_upper_snake_is_refused(raw: str) -> None:
    with pytest.raises(RelationTypeError, match="WORKS_ON"):
        normalise_relation_type(raw)


@given(st.text(max_size=70))
def test_a_written_relation_name_is_its_own_normal_form(raw: str) -> None:
    try:
        written = normalise_relation_type(raw)
    except RelationTypeError:
        return
    assert re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", written)
    assert normalise_relation_type(written) == written


def test_lookups_try_the_relation_as_given_then_its_written_spelling() -> None:
    assert relation_lookup_candidates("knows") == ("knows", "KNOWS")
    assert relation_lookup_candidates("KNOWS") == ("KNOWS",)
    assert relation_lookup_candidates("knows!") == ("knows!",)
