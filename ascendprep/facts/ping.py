"""NPU-to-NPU reachability from one node: ``hccn_tool -i <npu> -ping -g address <ip>``.

The pings of one NPU run one after the other; the NPUs of a node ping side by side (at most
:data:`~ascendprep.base.limits.NPU_PROBE_JOBS` at once, the script's ``ap_each_npu``), so a node's
matrix costs about one NPU's share of pings, not all of them in a row. A second hccn_tool may be
refused with ``hccn_tool is busy, please try again.``: that answer is retried with back-off
(1, 2, 4, 8, 8... s). The results come back in the order the pairs were asked for. The
device prints ``N packets transmitted, M received, P% packet loss``; any loss makes hccn_tool
exit 1 with ``Command execute failed!`` on stderr after the stdout block (docs/ascend-reference.md §1.4).
Each reply has its line ``recv seq=N,time=X.XXXXXXms`` and the tool prints no summary of the
times, so the average and slowest round trip are computed here from those lines.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from typing import Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, TypeVar

from ascendprep.base.limits import PING_REPLIES_MAX
from ascendprep.base.paths import DEFAULT_ASCEND_HOME
from ascendprep.facts.failures import BUSY_TEXT, classify_failure, over_cap_error
from ascendprep.facts.model import PingResult
from ascendprep.facts.sections import Section, id_number, new_nonce, parse_transcript, render_attrs
from ascendprep.facts.shell import UnsafeValue, check_devid, main_block, preamble


class _Pair(Protocol):
    """A pair's result: which NPU pinged which target (PingResult, HccsPingResult)."""

    @property
    def npu(self) -> int: ...

    @property
    def target(self) -> str: ...


R = TypeVar("R", bound=_Pair)

KIND = "ping"

#: ``(?<!\d)`` and at most 9 digits: a match starts only at the first digit of a number and a
#: 5,000-digit number is not one of hccn_tool's counts, so hostile digit runs cost one pass (not
#: one per digit, which is quadratic) and never reach int() (which refuses over 4,300 digits).
#: The loss is a number with at most one point (``1.2.3%`` is not one: float() would refuse it,
#: and one damaged line would cost the whole ping transcript).
_SUMMARY_RE = re.compile(
    r"(?<!\d)(\d{1,9})\s+packets transmitted,\s*(\d{1,9})\s+received,\s*(\d{1,9}(?:\.\d{0,15})?|\.\d{1,15})%\s+packets?\s+loss",
    re.IGNORECASE,
)

#: One reply's line, ``recv seq=0,time=1.418000ms`` (docs/ascend-reference.md, ``-ping``): the
#: numbers bounded as above, so a hostile line costs one pass.
_REPLY_RE = re.compile(r"recv seq=\d{1,9},\s*time\s*=\s*(\d{1,9}(?:\.\d{1,15})?)\s*ms", re.IGNORECASE)

_PING_FUNCTION = r"""# ap_ping NPU ADDRESS: one hccn_tool ping (exit 127 when hccn_tool is absent).
ap_ping() {
	if [ -z "$AP_HCCN" ]; then
		echo 'hccn_tool: not installed' >&2
		return 127
	fi
	ap_tool "$AP_HCCN" -i "$1" -ping -g address "$2"
}
"""


#: Ascend 950: the mode comes first and the source address is named (``hccn_tool -t -ping -i N
#: -src_address S -dst_address D``; hicann/driver ``ascend950/hccn_tool/tool_tcpip_ops.c``), the
#: summary line is the same (``tool_product.c``).
_PING_FUNCTION_950 = r"""# ap_ping NPU ADDRESS SOURCE: one Ascend 950 hccn_tool ping (exit 127 when hccn_tool is absent).
ap_ping() {
	if [ -z "$AP_HCCN" ]; then
		echo 'hccn_tool: not installed' >&2
		return 127
	fi
	ap_tool "$AP_HCCN" -t -ping -i "$1" -src_address "$3" -dst_address "$2"
}
"""


def _check_target(target: object) -> str:
    if not isinstance(target, str):
        raise UnsafeValue(f"ping target must be an IPv4 address string, not {target!r}")
    try:
        return str(ipaddress.IPv4Address(target))
    except ValueError:
        raise UnsafeValue(f"ping target {target!r} is not an IPv4 address") from None


def render_ping_script(
    pairs: Sequence[Tuple[int, str]],
    per_command_timeout: int,
    busy_retries: int = 5,
    ascend_home: str = DEFAULT_ASCEND_HOME,
    parallel: Optional[int] = None,
    sources: Optional[Mapping[int, str]] = None,
) -> str:
    """A POSIX sh script pinging each ``(npu devid, target IPv4)`` from this node.

    Each NPU's pings run in the order given; ``parallel`` NPUs ping at once (1: every ping in turn;
    None: :data:`~ascendprep.base.limits.NPU_PROBE_JOBS` or ``$ASCENDPREP_NPU_PROBE_JOBS``).
    ``sources``: Ascend 950 only, each NPU's own (bond) address, which its tool's ping names.
    """
    checked = [(check_devid(npu), _check_target(target)) for npu, target in pairs]
    source_of = {check_devid(npu): _check_target(ip) for npu, ip in (sources or {}).items()}
    if sources is not None and any(npu not in source_of for npu, _ in checked):
        raise UnsafeValue("an Ascend 950 ping needs the source address of every pinging NPU")
    q = shlex.quote
    by_npu: Dict[int, List[str]] = {}
    for npu, target in checked:
        by_npu.setdefault(npu, []).append(target)
    lines = [
        "ap_run settings '' printf 'timeout=%s\\n' \"$AP_T\"",
        "ap_run pairs '' printf '%s\\n' " + " ".join(q(f"{npu} {target}") for npu, target in checked),
        "ap_hccn_tool",
        "# ap_ping_npu: the pings of NPU $ap_dev (ap_each_npu runs it for every NPU in AP_DEVS).",
        "ap_ping_npu() {",
        "\tcase $ap_dev in",
    ]
    for npu, targets in by_npu.items():
        lines.append(f"\t{npu})")
        for target in targets:
            attrs = render_attrs(npu=npu, target=target)
            source = f" {q(source_of[npu])}" if sources is not None else ""
            lines.append(f"\t\tap_run ping {q(attrs)} ap_ping {npu} {q(target)}{source}")
        lines.append("\t\t;;")
    lines += ["\tesac", "}", f"AP_DEVS={q(' '.join(str(npu) for npu in by_npu))}", "ap_each_npu ap_ping_npu"]
    return "\n".join(
        [
            preamble(KIND, new_nonce(), per_command_timeout, busy_retries, ascend_home, parallel=parallel),
            _PING_FUNCTION if sources is None else _PING_FUNCTION_950,
            main_block("\n".join(lines) + "\n"),
        ]
    )


def parse_ping_output(text: str) -> List[PingResult]:
    """One PingResult per requested pair, in order; pairs the script never reached say so."""
    return parse_pair_transcript(
        text,
        KIND,
        "ping",
        _result,
        lambda npu, target, reason: PingResult(
            npu=npu, target=target, ok=False, error=f"not run: {reason or 'the script did not run this ping'}"
        ),
    )


def parse_pair_transcript(
    text: str,
    kind: str,
    section_name: str,
    result: Callable[[Section, int, str, Optional[int]], R],
    not_run: Callable[[int, str, Optional[str]], R],
) -> List[R]:
    """The results of a pair script (the RoCE pings here, the HCCS pings in probes/hccs.py): a
    ``settings`` section, a ``pairs`` section listing what was asked, then one ``section_name``
    section per pair. One result per requested pair, in the order asked: ``result(section, npu,
    target, the script's time limit or None)`` for a pair that ran, ``not_run(npu, target, the
    transcript's problem or None)`` for a pair the script never reached."""
    transcript = parse_transcript(text, kind)
    timeout_s: Optional[int] = None
    requested: List[Tuple[int, str]] = []
    results: List[R] = []
    answered: List[Tuple[int, str]] = []
    for section in transcript.sections:
        name = section.name
        if name == section_name:
            target, npu = section.attrs.get("target"), section.npu  # (read once per pair)
            if target and npu is not None:
                results.append(result(section, npu, target, timeout_s))
                answered.append((npu, target))
        elif name == "settings":
            for line in section.stdout.splitlines():
                key, _, value = line.partition("=")
                number = id_number(value) if key == "timeout" else None
                if number is not None:
                    timeout_s = number
        elif name == "pairs":
            for line in section.stdout.splitlines():
                asked_npu, _, asked_target = line.partition(" ")
                asked = id_number(asked_npu)
                if asked is not None and asked_target:
                    requested.append((asked, asked_target))
    if answered == requested:  # every pair, in the order asked: what a whole run prints
        return results
    done = set(answered)
    for npu, target in requested:
        if (npu, target) not in done:
            results.append(not_run(npu, target, transcript.problem))
    # The script runs the pairs NPU by NPU, side by side; the results keep the order they were asked for.
    order: Dict[Tuple[int, str], int] = {}
    for index, pair in enumerate(requested):
        order.setdefault(pair, index)
    return sorted(results, key=lambda item: order.get((item.npu, item.target), len(order)))


def parse_ping_summary(stdout: str) -> Optional[Tuple[int, int, float]]:
    """(sent, received, loss %) from the device's summary line, or None when there is none."""
    match = _SUMMARY_RE.search(stdout)
    if not match:
        return None
    sent, received, loss = match.groups()
    return int(sent), int(received), float(loss)


def parse_ping_times(stdout: str) -> Optional[Tuple[float, float]]:
    """(average, max) round-trip time in milliseconds of the replies' ``recv seq=N,time=X ms``
    lines (the first :data:`PING_REPLIES_MAX`), or None when no reply line is there."""
    times = []
    for match in _REPLY_RE.finditer(stdout):
        times.append(float(match.group(1)))
        if len(times) >= PING_REPLIES_MAX:
            break
    if not times:
        return None
    return round(sum(times) / len(times), 6), max(times)  # the tool prints microseconds: 6 decimals of ms


def _result(section: Section, npu: int, target: str, timeout_s: Optional[int]) -> PingResult:
    if "over" in section.attrs:  # (the command is worded only for a cut output: most are not)
        cut = over_cap_error(section, "ping", f"hccn_tool -i {npu} -ping -g address {target}", npu)
        if cut is not None:
            return PingResult(npu=npu, target=target, ok=False, error=cut.message)
    summary = parse_ping_summary(section.stdout)
    times = parse_ping_times(section.stdout)
    average, slowest = times if times else (None, None)
    if summary is not None and section.rc == 0 and summary[0] == summary[1] and summary[0] > 0:
        # every packet came back: the usual pair
        return PingResult(npu, target, True, *summary, average_ms=average, max_ms=slowest)
    sent, received, loss = summary if summary else (None, None, None)
    error = _error_text(section, summary, npu, target, timeout_s)
    return PingResult(
        npu=npu,
        target=target,
        ok=False,
        sent=sent,
        received=received,
        loss_percent=loss,
        error=error,
        average_ms=average,
        max_ms=slowest,
    )


def _error_text(
    section: Section, summary: Optional[Tuple[int, int, float]], npu: int, target: str, timeout_s: Optional[int]
) -> str:
    what = f"hccn_tool -i {npu} -ping -g address {target}"
    if summary is not None and not section.timed_out and BUSY_TEXT not in section.text:
        sent, received, loss = summary
        if sent == 0:
            return "no packets sent"
        message = f"{sent - received} of {sent} packets lost ({loss:g}% loss)"
        if "destination host unreachable" in section.stdout.lower():
            message += ", destination host unreachable"
        return message
    if section.rc == 0:
        return f"{what}: no ping summary in the output"
    return classify_failure(section, "ping", what, npu=npu, timeout_s=timeout_s).message
