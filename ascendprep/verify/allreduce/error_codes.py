"""HCCL's error codes and messages in a rank's log → the cause, the fix, and the verify check that
would have caught it before the run.

Data, mostly: each :class:`KnownError` is a pattern as HCCL, HCCP or gloo print it (the exact
words from the public threads named in ``source``), what it means, what to do, and the check ids
(:mod:`ascendprep.verify.checks.registry`) that look for the cause. :func:`named_causes` finds them in
a log, in the order they first appear; :func:`with_named_cause` adds the first to a node's
problem. Pure: no I/O, nothing imported from the launcher.

Codes appear as ``EJ0001: [PID: ...] ...`` or ``Communication_Error_Bind_IP_Port(EI0019): ...``
(newer CANN); both spellings match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import List, Optional, Pattern, Protocol, Tuple, TypeVar


@dataclass(frozen=True)
class KnownError:
    """One signature HCCL (or gloo) prints, and what to do about it."""

    key: str
    pattern: Pattern[str]
    cause: str
    fix: str
    checks: Tuple[str, ...]
    source: str


def _code(code: str) -> Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){code}(?![0-9])")


KNOWN_ERRORS: Tuple[KnownError, ...] = (
    KnownError(
        "EJ0001",
        _code("EJ0001"),
        "HCCP could not start on the NPU: a previous training process still holds it",
        "stop the process that holds the NPU (npu-smi info lists it), wait 10 s, and start again",
        ("npu.busy",),
        "https://github.com/hiyouga/LlamaFactory/issues/3839",
    ),
    KnownError(
        "EJ0002",
        _code("EJ0002"),
        "an NPU's network port is down (HCCP: ra hdc message process failed ret(-67))",
        "check the port with 'hccn_tool -i <devid> -link -g' and its optics and cable; 'hccn_tool -i <devid> -cfg recovery' once it is fixed",
        ("network.link", "network.optical", "network.net_health"),
        "https://github.com/vllm-project/vllm-ascend/issues/1815",
    ),
    KnownError(
        "EJ0003",
        _code("EJ0003"),
        "HCCL could not bind its host port (60000 + rank): another process already holds it",
        "stop the process on the port (ss -ltnp), reserve the block in net.ipv4.ip_local_reserved_ports, or move it with HCCL_IF_BASE_PORT",
        ("node.hccl_ports", "sysctl.reserved_ports"),
        "https://github.com/vllm-project/vllm-ascend/issues/405",
    ),
    KnownError(
        "EI0019",
        _code("EI0019"),
        "HCCL could not listen on its host port (60000 + rank): the port is in use",
        "stop the process on the port (ss -ltnp) or reserve the block in net.ipv4.ip_local_reserved_ports",
        ("node.hccl_ports", "sysctl.reserved_ports"),
        "https://github.com/vllm-project/vllm-ascend/pull/16205",
    ),
    KnownError(
        "EI0006",
        _code("EI0006"),
        "a socket between ranks timed out: a peer rank did not start (or crashed) within HCCL_CONNECT_TIMEOUT, or the NPU network between them is broken",
        "look for the rank that failed first; if every rank reports this, raise HCCL_CONNECT_TIMEOUT and check the NPU pings and TLS",
        ("cluster.reachability", "network.tls", "cluster.tls"),
        "https://github.com/vllm-project/vllm-ascend/issues/486",
    ),
    KnownError(
        "socket establish timeout",
        re.compile(r"wait socket establish timeout"),
        "a socket between ranks timed out (HCCL_CONNECT_TIMEOUT): a peer did not start in time, or the NPU network between them is broken",
        "look for the rank that failed first; raise HCCL_CONNECT_TIMEOUT if nodes start far apart; check the NPU pings and TLS",
        ("cluster.reachability", "network.tls", "cluster.tls"),
        "https://github.com/vllm-project/vllm-ascend/issues/9447",
    ),
    KnownError(
        "EI0014",
        _code("EI0014"),
        "the rank table (RANK_TABLE_FILE) is invalid or does not match the job",
        "regenerate the rank table ('ascendprep apply'), or unset RANK_TABLE_FILE when the job does not launch from one",
        ("job.rank_table", "files.managed"),
        "docs/ascend-reference.md §6 (HCOMM EI0004/EI0014/EI0017)",
    ),
    KnownError(
        "ra rdma init failed",
        re.compile(r"ra rdma init fail|rdma init fail|ra rdev init failed"),
        "RDMA on an NPU port did not start: the link is down, the device IP is not configured, or the rank table's IP is not the device's",
        "check 'hccn_tool -i <devid> -link -g' and '-ip -g' against the rank table and /etc/hccn.conf",
        ("network.link", "network.ip", "network.hccn_conf"),
        "https://github.com/vllm-project/vllm-ascend/issues/1815",
    ),
    KnownError(
        "connectFullMesh",
        re.compile(r"connectFullMesh failed|Using the loopback address as fallback"),
        "gloo's ranks could not connect: a hostname that resolves to loopback, or a host NIC without the address, made them advertise an address their peers cannot reach",
        "map each node's hostname to its cluster address in /etc/hosts, and set GLOO_SOCKET_IFNAME to the NIC that holds it",
        ("node.hostname", "node.host_nic"),
        "https://github.com/vllm-project/vllm/issues/7074",
    ),
)


def named_causes(text: str) -> List[KnownError]:
    """The known errors in ``text``, in the order they first appear (each once)."""
    found = []
    for known in KNOWN_ERRORS:
        match = known.pattern.search(text or "")
        if match is not None:
            found.append((match.start(), known))
    return [known for _, known in sorted(found, key=lambda item: item[0])]


def cause_sentence(known: KnownError) -> str:
    """``EJ0001: <cause> (verify would have caught it: npu.busy)``."""
    return f"{known.key}: {known.cause} (ascendprep verify checks this before a run: {', '.join(known.checks)})"


class _Explained(Protocol):
    """A problem that says what went wrong and what to do (frozen dataclasses such as NodeProblem)."""

    @property
    def message(self) -> str: ...

    @property
    def fix(self) -> str: ...


P = TypeVar("P", bound=_Explained)


def with_named_cause(problem: Optional[P], text: str) -> Optional[P]:
    """``problem`` (anything with ``message`` and ``fix``) with the first known error in
    ``text`` named in its message and its fix replaced by that error's; unchanged when none."""
    causes = named_causes(text)
    if problem is None or not causes:
        return problem
    first = causes[0]
    return replace(problem, message=f"{problem.message} -- {cause_sentence(first)}", fix=first.fix)  # type: ignore[type-var]  # dataclasses.replace of a protocol-bound TypeVar
