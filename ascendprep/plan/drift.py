"""Is a managed setting right on this host? The one judgement per item that plan and verify share.

Pure. For every item ascendprep manages (an NPU's address, gateway, detect IP and TLS switch, a
kernel setting, the reserved HCCL ports, a managed file, a firewall front end) one function here
compares the desired state with a host's facts and returns a :class:`Drift`: what the host has,
what is wanted, and whether they agree, or why that cannot be told (``unknown``). ``plan`` turns
a drift into a change (or, when unknown, into a reason its plan is incomplete); the checks in
``checks/network.py`` and ``checks/host.py`` turn the same drift into a verdict. So "is TLS right
on NPU 3?" has one answer, and a test (tests/core/test_drift_agreement.py) holds plan and verify
to it.

Values are machine values (addresses, numbers, sha256 digests, ``None`` for "not set"); the
words about them are the renderers' business.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from ascendprep.base.findings import Severity
from ascendprep.base.paths import SYSCTL_FILE
from ascendprep.desired.envfiles import render_sysctl_conf
from ascendprep.desired.state import DesiredState, FileToWrite, HccnSettings, NodeDesired
from ascendprep.facts.generation import npu_slots
from ascendprep.facts.model import HostFacts, NpuFacts, ProbeError
from ascendprep.inventory import sysctl as sysctl_rules

#: The firewall front ends apply can switch off; an nftables ruleset may be Docker's or the
#: site's, so it is only ever reported.
DISABLEABLE_FIREWALLS = ("ufw", "firewalld")
FIREWALLS = (*DISABLEABLE_FIREWALLS, "nftables")

#: /etc/hccn.conf key → NpuFacts attribute (what hccn_tool re-applies at driver start).
HCCN_CONF_KEYS = (("address", "ip"), ("netmask", "netmask"), ("gateway", "gateway"), ("netdetect", "netdetect"))


@dataclass(slots=True)
class Drift:
    """One managed item on one host, desired next to seen.

    ``key`` is the item's change key (``hccn.ip:3``, ``sysctl:net.core.somaxconn``,
    ``file:/etc/ascendprep/env.sh``, ``firewall:ufw``). ``want`` is what the inventory asks,
    ``have`` what the host has (``None``: not set). ``set_to`` is the value that brings the item in
    line (``want`` itself, except for "at least" settings, which keep a higher value the host
    has, and the reserved ports, which keep the host's own ranges). ``unknown`` says why ``have``
    could not be read: then ``in_sync`` means nothing. ``not_applicable``: the product has no
    such setting (the tool said "not supported").

    Not frozen (like the checks' Verdict): a drift only carries one judgement to the plan or
    the check that asked, which reads it at once and never changes it; a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, which costs more, and verify
    makes ~2-4 per NPU.
    """

    key: str
    want: Any
    have: Any = None
    in_sync: bool = True
    set_to: Any = None
    unknown: Optional[str] = None
    not_applicable: Optional[str] = None
    npu: Optional[int] = None

    @property
    def drifted(self) -> bool:
        """True when the host needs a change for this item (known, applicable, not in line)."""
        return self.unknown is None and self.not_applicable is None and not self.in_sync


@functools.lru_cache(maxsize=64)
def sha256_text(text: str) -> str:
    """The hex sha256 of ``text`` (UTF-8), remembered: a cluster-wide file such as the rank table
    is the same text on every node and grows with the node count, so hashing it once per node
    made plan quadratic in the node count."""
    return hashlib.sha256(text.encode()).hexdigest()


def _reason(errors: Sequence[ProbeError]) -> str:
    return "; ".join(dict.fromkeys(e.message for e in errors))


def _real(errors: Sequence[ProbeError]) -> tuple[list[ProbeError], list[ProbeError]]:
    """(errors that make a value unknown, "not supported on this product" answers)."""
    return [e for e in errors if e.kind != "unsupported"], [e for e in errors if e.kind == "unsupported"]


# --------------------------------------------------------------------------------------------
# NPU ports (hccn_tool values, and /etc/hccn.conf, which hccn_tool re-applies at driver start)


def _cidr(ip: Optional[str], netmask: Optional[str]) -> Optional[str]:
    """``10.20.0.1/255.255.255.0``; None when neither is set (a half is kept visible as ``/``)."""
    if ip is None and netmask is None:
        return None
    return f"{ip or ''}/{netmask or ''}"


def npu_live(facts: HostFacts, npu: int) -> NpuFacts:
    """The NPU's live values; an NPU hccn_tool did not report has none set."""
    return facts.npus.get(npu) or NpuFacts(devid=npu)


#: The /etc/hccn.conf entry of an NPU the file does not list (or of every NPU without a file).
_NO_ENTRY: Mapping[str, str] = MappingProxyType({})


class NpuPort(NamedTuple):
    """One NPU's live hccn values beside its /etc/hccn.conf entry, and the file's keys that
    differ from the device: what each of the NPU's items (address, gateway, detect IP) and
    verify's network.hccn_conf read. Worked out once per NPU (:func:`npu_port`), not once per
    item: verify asked for the stale keys three times per NPU."""

    npu: int
    live: NpuFacts
    #: The file's ``key → value`` for this NPU (empty without a file or an entry for it).
    in_file: Mapping[str, str]
    #: :data:`HCCN_CONF_KEYS` whose file value is not the device's, in that order.
    stale: Tuple[str, ...]


def conf_index(facts: HostFacts, npu: int) -> int:
    """The number an NPU's /etc/hccn.conf keys end in: its device id, or on the Ascend 950 its
    slot (``address_<slot>``: the 950 hccn_tool writes by ``slot_id``, hicann/driver
    ``ascend950/hccn_tool/tool_shell_ops.c``), read from ``npu-smi info -m``."""
    if facts.npu_chips is None:
        return npu
    return npu_slots(facts).get(npu, npu)


def npu_port(facts: HostFacts, npu: int) -> NpuPort:
    """The NPU's :class:`NpuPort`. A stale file quietly undoes a fix at the next driver
    restart, so the file must hold the device's values; the device against the plan is each
    item's own judgement. A missing file is stale for every key the device has set."""
    conf = facts.hccn_conf
    in_file = conf.devices.get(conf_index(facts, npu), _NO_ENTRY) if conf else _NO_ENTRY
    live = npu_live(facts, npu)
    stale = []
    for key, attribute in HCCN_CONF_KEYS:
        if in_file.get(key) != getattr(live, attribute):
            stale.append(key)
    return NpuPort(npu, live, in_file, tuple(stale))


def _npu_unknown(facts: HostFacts, npu: int, probes: Sequence[str]) -> tuple[Optional[str], Optional[str]]:
    """(why the NPU's value is unknown, why it does not apply) from its probes' errors."""
    if not facts.errors:  # most hosts, and verify asks ~4 times per NPU: no error to look up
        return (None, None) if npu in facts.npus else ("not reported by hccn_tool", None)
    if npu not in facts.npus and not facts.errors_for("hccn.", npu):
        return "not reported by hccn_tool", None
    errors = [e for probe in probes for e in facts.errors_for(probe, npu if probe.startswith("hccn.") else None)]
    real, unsupported = _real(errors)
    if real:
        return _reason(real), None
    if npu not in facts.npus:
        return "not reported by hccn_tool", None
    if unsupported:
        return None, _reason(unsupported)
    return None, None


def npu_address(want: HccnSettings, facts: HostFacts, port: Optional[NpuPort] = None) -> Drift:
    """The device's address/netmask, and the file's copy of them.

    ``have`` is ``{"device": "ip/netmask", "file": "ip/netmask"}``; in line when the device has
    the planned values and /etc/hccn.conf holds the device's (so both hold the plan's).
    ``port``: the NPU's :func:`npu_port`, when the caller has it already."""
    npu = want.npu
    if port is None:
        port = npu_port(facts, npu)
    live, in_file = port.live, port.in_file
    wanted = _cidr(want.ip, want.netmask)
    have = {
        "device": _cidr(live.ip, live.netmask),
        "file": _cidr(in_file.get("address"), in_file.get("netmask")) if facts.hccn_conf else None,
    }
    unknown, _ = _npu_unknown(facts, npu, ("hccn.ip", "hccn_conf"))
    stale = "address" in port.stale or "netmask" in port.stale
    return Drift(f"hccn.ip:{npu}", wanted, have, have["device"] == wanted and not stale, wanted, unknown, npu=npu)


def _device_and_file(
    kind: str, want: Optional[str], facts: HostFacts, npu: int, conf_key: str, attribute: str, port: Optional[NpuPort]
) -> Drift:
    if port is None:
        port = npu_port(facts, npu)
    have = {"device": getattr(port.live, attribute), "file": port.in_file.get(conf_key) if facts.hccn_conf else None}
    unknown, not_applicable = _npu_unknown(facts, npu, (f"hccn.{kind}", "hccn_conf"))
    in_sync = have["device"] == want and conf_key not in port.stale
    return Drift(f"hccn.{kind}:{npu}", want, have, in_sync, want, unknown, not_applicable, npu=npu)


def npu_gateway(want: HccnSettings, facts: HostFacts, port: Optional[NpuPort] = None) -> Optional[Drift]:
    """The planned gateway against the device and the file. (hccn_tool drops a gateway that an
    address change leaves outside the subnet; such a gateway differs from the planned one, which
    ipplan keeps inside it, so it is set again anyway.)

    With no gateway planned, a gateway the device or /etc/hccn.conf still has is drift to remove
    (``want`` and ``set_to`` None): an inventory that dropped its gateway must not leave one
    routing the NPU's traffic. None when none is planned and none is set (or the product has no
    gateway command), nothing to judge."""
    if want.gateway is not None:
        return _device_and_file("gateway", want.gateway, facts, want.npu, "gateway", "gateway", port)
    npu = want.npu
    if port is None:
        port = npu_port(facts, npu)
    have = {"device": port.live.gateway, "file": port.in_file.get("gateway") if facts.hccn_conf else None}
    unknown, not_applicable = _npu_unknown(facts, npu, ("hccn.gateway", "hccn_conf"))
    if not_applicable is not None or (unknown is None and have["device"] is None and have["file"] is None):
        return None
    return Drift(f"hccn.gateway:{npu}", None, have, False, None, unknown, npu=npu)


def npu_netdetect(want: HccnSettings, facts: HostFacts, port: Optional[NpuPort] = None) -> Optional[Drift]:
    """None when no detect IP is planned."""
    if want.netdetect is None:
        return None
    return _device_and_file("netdetect", want.netdetect, facts, want.npu, "netdetect", "netdetect", port)


def tls_effective(facts: HostFacts, npu: int) -> Optional[int]:
    """1 when TLS is on, 0 when off, None when not reported. A port without certificates runs
    without TLS whatever its switch says ("No certificate found", docs/ascend-reference.md §1.4 -tls)."""
    state = npu_live(facts, npu).tls
    if state is None:
        return None
    if not state.certificates:
        return 0
    return None if state.switch is None else (1 if state.switch == 1 else 0)


def npu_tls(want: HccnSettings, facts: HostFacts) -> Optional[Drift]:
    """None when the inventory sets no TLS switch."""
    if want.tls is None:
        return None
    npu = want.npu
    unknown, not_applicable = _npu_unknown(facts, npu, ("hccn.tls",))
    have = tls_effective(facts, npu)
    if unknown is None and not_applicable is None and have is None:
        unknown = "TLS state not reported by hccn_tool"
    return Drift(f"hccn.tls:{npu}", want.tls, have, have == want.tls, want.tls, unknown, not_applicable, npu=npu)


def npu_drifts(want: HccnSettings, facts: HostFacts) -> list[Drift]:
    """An NPU's items in the order apply sets them: address, gateway, detect IP, TLS."""
    port = npu_port(facts, want.npu)
    others = (npu_gateway(want, facts, port), npu_netdetect(want, facts, port), npu_tls(want, facts))
    return [npu_address(want, facts, port), *(d for d in others if d is not None)]


# --------------------------------------------------------------------------------------------
# Kernel settings


def at_least(have: str, want: Union[int, str]) -> bool:
    """``want`` a number: ``have`` is a number at least as high. Text: the same words (the kernel
    prints multi-value settings such as tcp_rmem with tabs)."""
    if isinstance(want, int):
        text = have.strip()
        return text.isdigit() and int(text) >= want
    return have.split() == str(want).split()


def _sysctl_unknown(facts: HostFacts, key: str) -> Optional[str]:
    errors = facts.errors_for(f"sysctl:{key}")
    if errors:
        return _reason(errors)
    if key not in facts.sysctl:
        return f"{key} is not among the kernel settings the gather script reads"
    return None


def sysctl_value(key: str, want: Union[int, str], facts: HostFacts) -> Drift:
    """An "at least" setting: a host tuned higher is in line, and keeps its value (``set_to``)."""
    unknown = _sysctl_unknown(facts, key)
    have = facts.sysctl.get(key, "").strip()
    set_to = want
    if isinstance(want, int) and have.isdigit():
        set_to = max(want, int(have))
    return Drift(
        f"sysctl:{key}",
        want,
        have if unknown is None else None,
        unknown is None and at_least(have, want),
        str(set_to),
        unknown,
    )


def reserved_ports(node: NodeDesired, facts: HostFacts) -> Drift:
    """The reserved ports must *cover* HCCL's (and the inventory's); the host's own are kept."""
    key = sysctl_rules.RESERVED_PORTS
    want = sysctl_rules.format_port_ranges(node.reserved_ports)
    unknown = _sysctl_unknown(facts, key)
    if unknown is not None:
        return Drift(f"sysctl:{key}", want, None, False, None, unknown)
    have = facts.sysctl[key].strip()
    try:
        covered = sysctl_rules.covers(have, node.reserved_ports)
        merged = sysctl_rules.merge_reserved_ports(have, node.reserved_ports)
    except sysctl_rules.PortRangeError as exc:
        return Drift(f"sysctl:{key}", want, have, False, None, f"{key} cannot be read: {exc}")
    return Drift(f"sysctl:{key}", want, have, covered, merged)


def sysctl_drifts(node: NodeDesired, facts: HostFacts) -> list[Drift]:
    """Every kernel setting of the node: the "at least" ones, then the reserved ports."""
    return [
        *(sysctl_value(key, want, facts) for key, want in node.sysctl_minimums.items()),
        reserved_ports(node, facts),
    ]


def sysctl_target(drifts: Sequence[Drift]) -> dict[str, str]:
    """The values to persist: each setting's ``set_to`` (all must be known)."""
    return {d.key.split(":", 1)[1]: d.set_to for d in drifts}


def sysctl_file(node: NodeDesired, facts: HostFacts, values: Optional[Sequence[Drift]] = None) -> Drift:
    """The persisted drop-in must be exactly what apply writes for the values the host keeps.

    It is ascendprep's own file and sorts late in /etc/sysctl.d, so a value it holds wins at
    boot over the host's other files: persisting only the minimum would lower a host tuned
    higher at the next reboot. ``have``/``want`` are sha256 digests; unknown while a live value
    is unknown (the content depends on them)."""
    values = sysctl_drifts(node, facts) if values is None else values
    unknown = [d for d in values if d.unknown is not None]
    saved = facts.sysctl_file
    have = sha256_text(saved.raw) if saved is not None else None
    key = f"file:{SYSCTL_FILE}"
    if unknown:
        return Drift(key, None, have, False, None, "; ".join(d.unknown or "" for d in unknown))
    errors = facts.errors_for("sysctl_file")
    if errors:
        return Drift(key, None, None, False, None, _reason(errors))
    content = render_sysctl_conf(sysctl_target(values))
    want = sha256_text(content)
    return Drift(key, want, have, have == want, content)


def sysctl_file_problems(facts: HostFacts, values: Sequence[Drift]) -> list[str]:
    """Which persisted values differ from what apply writes (for people: the file's own words)."""
    saved = facts.sysctl_file
    problems = []
    for key, value in sysctl_target(values).items():
        have = saved.values.get(key) if saved else None
        if have is None or have.split() != value.split():
            problems.append(f"{key}={have if have is not None else '(missing)'} (apply writes {value})")
    return problems


# --------------------------------------------------------------------------------------------
# Managed files


def managed_file(wanted: FileToWrite, facts: HostFacts) -> Drift:
    """Byte-identical to what the plan renders, compared by sha256 (no content travels back)."""
    key = f"file:{wanted.path}"
    digest = sha256_text(wanted.content)
    errors = facts.errors_for(key)
    have = facts.managed_files.get(wanted.path)
    if errors:
        return Drift(key, digest, None, False, digest, _reason(errors))
    if have is None:
        return Drift(key, digest, None, False, digest, f"{wanted.path} is not among the files the gather script reads")
    seen = have.sha256 if have.exists else None
    return Drift(key, digest, seen, seen == digest, digest)


# --------------------------------------------------------------------------------------------
# Firewall


def firewall(policy: str, facts: HostFacts) -> list[Drift]:
    """Per installed front end: want inactive (``False``) unless the policy is ``leave``."""
    if policy == "leave":
        return []
    drifts = []
    for tool in FIREWALLS:
        key = f"firewall:{tool}"
        errors = facts.errors_for(f"firewall.{tool}")
        state = getattr(facts.firewall, tool)
        if errors:
            drifts.append(Drift(key, False, None, False, False, _reason(errors)))
        elif state is None or not state.installed:
            continue
        elif state.active is None:
            drifts.append(Drift(key, False, None, False, False, f"{tool}'s state could not be read"))
        else:
            drifts.append(Drift(key, False, state.active, not state.active, False))
    return drifts


def firewall_disables(policy: str, tool: str) -> bool:
    """Whether apply switches ``tool`` off (else an active one is only reported)."""
    return policy == "disable" and tool in DISABLEABLE_FIREWALLS


def firewall_severity(policy: str, tool: str) -> Severity:
    """An error where the inventory asked for the firewall to be off; a warning otherwise."""
    return Severity.ERROR if firewall_disables(policy, tool) else Severity.WARNING


def hccl_ports_text(desired: DesiredState) -> str:
    lo, hi = desired.hccl_ports
    return f"{lo}-{hi}"


def firewall_fix(desired: DesiredState, tool: str) -> str:
    """One fix line per situation, naming HCCL's port range for the CANN the inventory expects."""
    ports = hccl_ports_text(desired)
    if tool == "nftables":
        return f"review the ruleset (ascendprep does not flush it): HCCL needs ports {ports}, the master port and the device ports between nodes"
    if firewall_disables(desired.firewall, tool):
        return "run 'ascendprep plan' and 'ascendprep apply' (firewall: disable)"
    return f"open HCCL's ports {ports} and the master port between nodes, or set firewall: disable in the inventory"


def firewall_problem(tool: str, detail: Optional[str]) -> str:
    what = (
        f"an nftables ruleset is loaded ({detail or 'tables present'})" if tool == "nftables" else f"{tool} is active"
    )
    return f"{what} and may block HCCL's ports"
