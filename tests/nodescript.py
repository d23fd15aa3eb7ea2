"""Run a node script in a shell of its own process group (pytest helper, not shipped).

``subprocess.run(["sh", "-s"], timeout=...)`` kills only the shell when the time is up: a
pipeline the script started (``cat /dev/zero | tee ...``, a hung simulated tool) runs on,
orphaned, and loads the machine for every later test. Here the script gets a new session, and on
a timeout, Ctrl-C or any error the whole group is killed before the exception goes on, as
:class:`ascendprep.remote.local.LocalTransport` does for real runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import Any, Mapping, Optional, Sequence


def _kill_group(pgid: int) -> None:
    # The group may be gone already (every member exited): nothing left to kill.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def run_node_script(
    args: Sequence[str],
    *,
    input: Any = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Any = None,
    capture_output: bool = True,
    text: bool = False,
    timeout: Optional[float] = None,
    check: bool = False,
) -> subprocess.CompletedProcess:
    """``subprocess.run(args, ...)`` for a script: the same result, but a timeout (raised as
    ``subprocess.TimeoutExpired``) kills everything the script started, not only its shell."""
    pipe = subprocess.PIPE if capture_output else None
    process = subprocess.Popen(
        list(args), stdin=subprocess.PIPE, stdout=pipe, stderr=pipe, env=env, cwd=cwd, text=text, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(input, timeout=timeout)
    except BaseException:
        _kill_group(process.pid)
        process.communicate()
        raise
    _kill_group(process.pid)  # anything the script left running in the background
    if check and process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, list(args), stdout, stderr)
    return subprocess.CompletedProcess(list(args), process.returncode, stdout, stderr)
