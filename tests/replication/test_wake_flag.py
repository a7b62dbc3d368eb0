"""The writer wakes the sender process with a byte only while the sender is idle: a burst of
commits writes one byte, not one per commit (graphmem.replication.wake_flag)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from graphmem.replication.sender_process import SenderProcess
from graphmem.replication.wake_flag import WakeFlag


def _bytes_waiting(fd: int) -> int:
    os.set_blocking(fd, False)
    count = 0
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return count
        count += len(chunk)


def _ignore(*_: Any) -> None:
    return None


def test_a_burst_of_commits_writes_one_wake_byte_until_the_sender_is_idle_again() -> None:
    sender = SenderProcess("{}", _ignore, _ignore)  # its child never started: only the pipe
    try:
        for _ in range(100):
            sender.wake()
        assert _bytes_waiting(sender._wake_r) == 1
        flag = sender._idle
        assert flag is not None
        flag.set(idle=True)  # the sender, idle again after its round
        for _ in range(100):
            sender.wake()
        assert _bytes_waiting(sender._wake_r) == 1
    finally:
        sender.stop(1.0)


def test_the_flag_set_by_another_process_is_seen_by_the_writer() -> None:
    flag = WakeFlag.create()
    assert flag is not None
    try:
        assert flag.take() and not flag.take()  # created idle; taken once
        # The sender process opens the inherited descriptor and marks itself idle.
        code = "import sys; from graphmem.replication.wake_flag import WakeFlag; "
        code += "WakeFlag(int(sys.argv[1])).set(idle=True)"
        subprocess.run(
            [sys.executable, "-c", code, str(flag.fd)], pass_fds=(flag.fd,), check=True, timeout=60
        )
        assert flag.take()
    finally:
        flag.close()


def test_the_first_commit_asks_for_a_sender_even_while_the_flag_says_busy() -> None:
    sender = SenderProcess("{}", _ignore, _ignore)  # its child never started: only the pipe
    try:
        flag = sender._idle
        assert flag is not None
        flag.set(idle=False)  # no byte is due: the commit must still say a sender is needed
        sender.wake()
        assert sender._needed.is_set()
        assert _bytes_waiting(sender._wake_r) == 0
    finally:
        sender.stop(1.0)


def test_a_commit_after_the_stop_writes_nothing() -> None:
    sender = SenderProcess("{}", _ignore, _ignore)
    sender.stop(1.0)
    sender.wake()  # the flag and the pipe are closed: neither raises nor writes
