"""Metadata entries: stored under the key as spelled, found under any spelling of it."""

from __future__ import annotations

from projections.metadata import format_entry, key_spellings, normalize_key


def test_an_entry_keeps_the_key_as_the_schema_spells_it() -> None:
    assert format_entry("currentLocation", "Rivendell") == "currentLocation: Rivendell"
    assert format_entry("relatedNPCs", "Gandalf") == "relatedNPCs: Gandalf"


def test_a_key_is_searched_under_its_title_case_camel_case_and_snake_case_spellings() -> None:
    assert key_spellings("currentLocation") == [
        "currentLocation",
        "Current Location",
        "current_location",
    ]
    assert key_spellings("Current Location: Rivendell") == [
        "Current Location: Rivendell",
        "currentLocation: Rivendell",
        "current_location: Rivendell",
    ]
    # The spelling an older graphmem stored for relatedNPCs is among them.
    assert "Related NP Cs" in key_spellings("relatedNPCs")


def test_a_one_word_key_has_no_other_spelling_and_all_spellings_normalize_alike() -> None:
    assert key_spellings("motto") == ["motto"]
    assert key_spellings(": x") == [": x"]
    assert {normalize_key(k) for k in key_spellings("dangerLevel")} == {"dangerlevel"}
