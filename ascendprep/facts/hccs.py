"""The A3 HCCS plane from one node: ``hccn_tool -i <die> -hccs_ping -g address <peer vNIC>``.

Like the RoCE pings (:mod:`ascendprep.facts.ping`), one script per node runs its pings one at a
time (hccn_tool refuses concurrent calls) with the same busy retries and per-call limits. The
device prints, per docs/a3-superpod.md §2 (driver ``tool_ping_printf``): ``device D PING A``, a
line per packet (``This pkt ping success!`` + ``recv seq S, time = x.yyyus, ...``, or ``... fail!``),
``N packets transmitted, M received, P% packets loss`` and ``max``/``min``/``average``/``TP95 time``
lines. The address must be a vNIC (``192.<server>.<2+die>.<199-devid>``): the tool decodes it to
an SDID, so a RoCE address is never a target here.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from typing import Dict, List, Optional, Sequence, Tuple

from ascendprep.base.paths import DEFAULT_ASCEND_HOME
from ascendprep.facts.failures import BUSY_TEXT, classify_failure, over_cap_error
from ascendprep.facts.model import HccsPingResult
from ascendprep.facts.ping import parse_pair_transcript, parse_ping_summary
from ascendprep.facts.sections import Section, new_nonce, render_attrs
from ascendprep.facts.shell import UnsafeValue, check_devid, main_block, preamble

KIND = "hccs"

#: ``max time = 11.480us`` (also ``:`` and a space before ``us``); bounded digit runs, as in ping.py.
_TIME_RE = re.compile(r"\b(max|min|average|TP95) time\s*[=:]\s*(\d{1,9}(?:\.\d{1,6})?)\s*us\b", re.IGNORECASE)

_HCCS_FUNCTION = r"""# ap_hccs DIE VNIC: one HCCS ping (exit 127 when hccn_tool is absent).
ap_hccs() {
	if [ -z "$AP_HCCN" ]; then
		echo 'hccn_tool: not installed' >&2
		return 127
	fi
	ap_tool "$AP_HCCN" -i "$1" -hccs_ping -g address "$2"
}
"""


def _check_vnic(target: object) -> str:
    if not isinstance(target, str):
        raise UnsafeValue(f"HCCS ping target must be an IPv4 address string, not {target!r}")
    try:
        address = ipaddress.IPv4Address(target)
    except ValueError:
        raise UnsafeValue(f"HCCS ping target {target!r} is not an IPv4 address") from None
    if address not in ipaddress.IPv4Network("192.0.0.0/8"):
        raise UnsafeValue(f"HCCS ping target {target}: a vNIC address is in 192.0.0.0/8")
    return str(address)


def render_hccs_script(
    pairs: Sequence[Tuple[int, str]],
    per_command_timeout: int,
    busy_retries: int = 5,
    ascend_home: str = DEFAULT_ASCEND_HOME,
) -> str:
    """A POSIX sh script HCCS-pinging each ``(die devid, peer vNIC)`` from this node, in order."""
    checked = [(check_devid(die), _check_vnic(target)) for die, target in pairs]
    q = shlex.quote
    lines = [
        "ap_run settings '' printf 'timeout=%s\\n' \"$AP_T\"",
        "ap_run pairs '' printf '%s\\n' " + " ".join(q(f"{die} {target}") for die, target in checked),
        "ap_hccn_tool",
    ]
    for die, target in checked:
        lines.append(f"ap_run hccs {q(render_attrs(npu=die, target=target))} ap_hccs {die} {q(target)}")
    return "\n".join(
        [
            preamble(KIND, new_nonce(), per_command_timeout, busy_retries, ascend_home),
            _HCCS_FUNCTION,
            main_block("\n".join(lines) + "\n"),
        ]
    )


def parse_hccs_times(stdout: str) -> Dict[str, float]:
    """``{"max": 11.48, "average": 9.3, ...}`` from the device's time lines (microseconds)."""
    return {match.group(1).lower(): float(match.group(2)) for match in _TIME_RE.finditer(stdout)}


def parse_hccs_output(text: str) -> List[HccsPingResult]:
    """One result per requested pair, in order; pairs the script never reached say so."""
    return parse_pair_transcript(
        text,
        KIND,
        "hccs",
        _result,
        lambda die, target, reason: HccsPingResult(
            npu=die, target=target, ok=False, error=f"not run: {reason or 'the script did not run this HCCS ping'}"
        ),
    )


def _result(section: Section, die: int, target: str, timeout_s: Optional[int]) -> HccsPingResult:
    what = f"hccn_tool -i {die} -hccs_ping -g address {target}"
    cut = over_cap_error(section, "hccs", what, die)
    if cut is not None:
        return HccsPingResult(npu=die, target=target, ok=False, error=cut.message)
    summary = parse_ping_summary(section.stdout)
    times = parse_hccs_times(section.stdout)
    sent, received, loss = summary if summary else (None, None, None)
    ok = section.rc == 0 and summary is not None and sent == received and (sent or 0) > 0
    error = None
    if not ok:
        if summary is not None and not section.timed_out and BUSY_TEXT not in section.text:
            error = (
                "no packets sent"
                if sent == 0
                else f"{(sent or 0) - (received or 0)} of {sent} packets lost ({loss:g}% loss)"
            )
        elif section.rc == 0:
            error = f"{what}: no summary line in the output"
        else:
            error = classify_failure(section, "hccs", what, npu=die, timeout_s=timeout_s).message
    return HccsPingResult(
        npu=die,
        target=target,
        ok=ok,
        sent=sent,
        received=received,
        loss_percent=loss,
        average_us=times.get("average") if ok or received else None,
        max_us=times.get("max") if ok or received else None,
        error=error,
    )
