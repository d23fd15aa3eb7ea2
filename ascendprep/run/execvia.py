"""``verify --exec-via 'docker exec trainer'``: run the node checks inside the job's container.

Jobs often run in a container, and "device ip is not set" in the field is most often a container
that does not see what the host has. With a wrapper named, the gather script (every node check)
runs through it, and beside it the host reports what *it* sees of the same things, so that
``job.container`` can name what the container lacks. Everything else verify runs on a node runs
through the same wrapper (:func:`wrap_step`): the RoCE pings, the A3 HCCS pings and every step of
the all-reduce (preflight, worker upload, torchrun, cleanup), so that they meet what a job in
that container meets, not what the host has.

The wrapper is a command *prefix*, never shell text: it is split with :func:`shlex.split`, each
word is checked (:func:`parse_exec_via`) and the words are quoted again when the host's script
is built. The gather script travels as one argument (``PREFIX sh -c SCRIPT sh HOSTVIEW``), so the
wrapper does not need to pass stdin on (``docker exec`` without ``-i`` works); kubectl needs its
``--``: ``--exec-via 'kubectl exec -n ml trainer-0 --'``.

A wrapper that does not start (no such container, not installed, refused) prints no gather
header: :func:`explain_failure` turns that into one error naming the wrapper and what it said,
and ``node.reachable`` reports it, so every node check of that node is "not checked" with it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from typing import Optional, Tuple

from ascendprep.base import limits
from ascendprep.base.paths import DEFAULT_ASCEND_HOME
from ascendprep.facts import jobenv
from ascendprep.facts.model import HostFacts, ProbeError
from ascendprep.facts.shell import quote_home
from ascendprep.remote.errors import RemoteError

#: A word of the prefix: options, names, ``ns/pod``, ``--user=1000:1000``, absolute paths.
_WORD_RE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")
_FIRST_WORD_RE = re.compile(r"^(/[A-Za-z0-9_@%+=:,./-]+|[A-Za-z0-9_][A-Za-z0-9_.+-]*)$")
#: Characters of the wrapper's own error text kept in the message.
FAILURE_TEXT_CHARS = 400


class ExecViaError(ValueError):
    """An ``--exec-via`` value that is not a plain command prefix; the message says which word."""


@dataclass(frozen=True)
class ExecVia:
    """A checked command prefix. ``words`` are safe to quote; ``text`` is how messages show it."""

    words: Tuple[str, ...]

    @property
    def text(self) -> str:
        return shlex.join(self.words)


def parse_exec_via(value: str) -> ExecVia:
    """Split and check ``value``: a command (name or absolute path) and plain argument words.

    Refused: shell syntax (``;``, ``|``, ``$``, quotes inside words, redirections), empty or
    over-long prefixes, a first word that is an option or a relative path.
    """
    if not isinstance(value, str) or not value.strip():
        raise ExecViaError("--exec-via: give a command prefix, e.g. 'docker exec trainer'")
    if len(value) > limits.EXEC_VIA_MAX_CHARS:
        raise ExecViaError(f"--exec-via: longer than {limits.EXEC_VIA_MAX_CHARS} characters")
    if any(ch in value for ch in "\0\n\r"):
        raise ExecViaError("--exec-via: must be one line")
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ExecViaError(f"--exec-via: {exc}") from None
    if not words:
        raise ExecViaError("--exec-via: give a command prefix, e.g. 'docker exec trainer'")
    if len(words) > limits.EXEC_VIA_MAX_WORDS:
        raise ExecViaError(f"--exec-via: more than {limits.EXEC_VIA_MAX_WORDS} words")
    if not _FIRST_WORD_RE.match(words[0]):
        raise ExecViaError(f"--exec-via: {words[0]!r} is not a command name or an absolute path")
    for index, word in enumerate(words[1:], start=2):
        if not _WORD_RE.match(word):
            raise ExecViaError(
                f"--exec-via: word {index} {word!r} has characters other than letters, digits and _@%+=:,./-"
            )
    return ExecVia(tuple(words))


def wrap_script(script: str, via: ExecVia, ascend_home: str = DEFAULT_ASCEND_HOME) -> str:
    """The host-side script: the host's view of what a job needs, then ``script`` through ``via``.

    ``script`` becomes one quoted argument of ``sh -c``; the host's view reaches it as ``$1``
    (``AP_VIA_HOST``), which the gather prints as the ``job.host_visible`` section.
    """
    inner = "AP_VIA_HOST=${1-}\n" + script
    prefix = " ".join(shlex.quote(word) for word in via.words)
    return (
        "#!/bin/sh\n# ascendprep: the node checks run through --exec-via; first what the host itself sees.\n"
        + jobenv.visibility_function()
        + f"ap_host=$(printf 'via %s\\n' {shlex.quote(via.text)}; ap_job_visible {quote_home(ascend_home)})\n"
        + f'exec {prefix} sh -c {shlex.quote(inner)} sh "$ap_host" </dev/null\n'
    )


def wrap_step(script: str, via: Optional[ExecVia], host: str, what: str) -> str:
    """``script`` (a ping, HCCS ping or all-reduce step of ``host``) run through ``via``; unchanged without one.

    As with the gather, the script is one quoted argument of ``sh -c`` behind the quoted prefix
    words, with stdin from /dev/null (the wrapper need not pass stdin on); the inner shell is named
    after the step (``$0``: ``ascendprep-ping``), so its own error messages say which step failed.
    Linux refuses a single argument of :data:`~ascendprep.base.limits.EXEC_VIA_SCRIPT_MAX_BYTES` or
    more, so a longer script is a RemoteError of ``host`` naming ``what`` and the limit, before
    anything is sent.
    """
    if via is None:
        return script
    size = len(script.encode("utf-8"))
    if size > limits.EXEC_VIA_SCRIPT_MAX_BYTES:
        raise RemoteError(
            host,
            f"{host}: the {what} script is {size} bytes; through --exec-via it is one argument, "
            f"and Linux takes at most {limits.EXEC_VIA_SCRIPT_MAX_BYTES} bytes in one",
        )
    prefix = " ".join(shlex.quote(word) for word in via.words)
    name = "ascendprep-" + re.sub(r"[^a-z0-9]+", "-", what.lower()).strip("-")
    return (
        "# ascendprep: this step runs through --exec-via.\n"
        f"exec {prefix} sh -c {shlex.quote(script)} {shlex.quote(name)} </dev/null\n"
    )


def explain_failure(facts: HostFacts, via: ExecVia, rc: int, stderr: str) -> HostFacts:
    """Facts of a wrapped gather that never started: one ``gather`` error naming the wrapper.

    A started gather (its header was read, so ``hostname`` or any section came back) is returned
    unchanged: its own errors say what failed inside.
    """
    started = facts.hostname is not None or facts.job is not None or facts.arch is not None
    if started:
        return facts
    said = " ".join(stderr.split())[:FAILURE_TEXT_CHARS] or "no output"
    message = f"--exec-via {via.text!r} did not start the checks (exit {rc}): {said}"
    others = tuple(e for e in facts.errors if e.probe != "gather")
    return replace(facts, errors=(ProbeError(probe="gather", kind="error", message=message),) + others)
