"""Finding the Project of a working directory (contract §8.1 project affinity)."""

from __future__ import annotations

from projections.graph_family._directories import DirectoryIndex

PROJECTS = {
    "Home": "/home/u",
    "Graph": "/home/u/graph-memory",
    "Graph Copy": "/home/u/graph-memory",
    "Tools": "/home/u/tools/",
    "Win": "C:\\src\\win",
}


def test_a_directory_equal_to_the_text_is_found_ties_by_name() -> None:
    assert DirectoryIndex(PROJECTS).find("/home/u/graph-memory") == "Graph"


def test_a_directory_containing_the_text_is_found_longest_first() -> None:
    index = DirectoryIndex(PROJECTS)

    assert index.find("graph-mem") == "Graph"
    assert index.find("/home/u") == "Graph"  # contained in the longer ones too
    assert index.find("nowhere") is None


def test_a_parent_folder_of_the_text_is_found_nearest_first() -> None:
    index = DirectoryIndex(PROJECTS)

    assert index.find("/home/u/graph-memory/src/lib") == "Graph"
    assert index.find("/home/u/tools/bin") == "Tools"  # its trailing slash does not matter
    assert index.find("/home/u/other") == "Home"
    assert index.find("C:\\src\\win\\app") == "Win"
    assert index.find("/elsewhere/x") is None


def test_an_empty_graph_finds_nothing() -> None:
    assert DirectoryIndex({}).find("/a/b") is None
