"""A restored data dir's identity (eventstore.identity): a new node id, the former ones never
written as again."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventstore.events import EntityCreated
from eventstore.identity import renew_node_id
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import RetiredNodeIdError


def test_a_renewed_data_dir_writes_as_a_new_id_and_keeps_the_old_ids_events(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as log:
        old = log.node_id
        log.append([EntityCreated(name="x", entity_type="t")])
    with LmdbEventLog.open(tmp_path, node_id="laptop") as log:
        log.append([EntityCreated(name="y", entity_type="t")])

    new, former = renew_node_id(tmp_path, {"laptop"})

    assert former == {old, "laptop"} and new not in former
    with LmdbEventLog.open(tmp_path) as log:
        assert log.node_id == new and log.former_node_ids == former
        log.append([EntityCreated(name="z", entity_type="t")])
        assert log.origins() == {old: 1, "laptop": 1, new: 1}
    again, more = renew_node_id(tmp_path)
    assert more == {old, "laptop", new} and again not in more


def test_opening_a_data_dir_to_write_as_a_former_id_is_refused_with_what_to_do(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as log:
        stored = log.node_id
    new, _ = renew_node_id(tmp_path, {"laptop"})
    for former in ("laptop", stored):
        with pytest.raises(
            RetiredNodeIdError, match=f"unset it to use the data dir's own, '{new}'"
        ):
            LmdbEventLog.open(tmp_path, node_id=former)
    with LmdbEventLog.open(tmp_path) as log:
        assert log.node_id == new
    with LmdbEventLog.open(tmp_path, node_id="desk") as log:
        assert log.node_id == "desk"
