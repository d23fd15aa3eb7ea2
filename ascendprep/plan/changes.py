"""Typed changes: one frozen dataclass per kind of change apply can make on a host.

Each kind owns its place in the apply order (:data:`Change.order`: per NPU the address, then the
gateway, which needs it, then the detect IP, which probes through it, then TLS; then live
kernel settings; then files; then the firewall) and the script fragment that carries it out
(:meth:`Change.fragment`). ``before`` and ``after`` are machine values (an address, a number, a
sha256 digest, ``None`` for "not set"), so a saved plan is compared with a fresh diff by value;
the words about a change belong to the renderers (``report/changes.py``).

A change's ``key`` (``hccn.ip:3``, ``sysctl:net.core.somaxconn``, ``file:/etc/ascendprep/env.sh``,
``firewall:ufw``) is its kind and its target: the same item on a host has the same key in every
plan, which is how apply tells "already done" from "changed since planning".

Pure; :func:`from_saved` reads one back from a plan file and treats it as hostile input.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Optional, Tuple

from ascendprep.base.limits import ENV_SH_MAX_VARIABLES
from ascendprep.base.paths import ENV_SH, HCCN_CONF
from ascendprep.base.text import visible
from ascendprep.inventory import sysctl as sysctl_rules

#: hccn_tool set commands are quick; one that hangs is cut off so the rest of the host proceeds.
HCCN_STEP_TIMEOUT = 60
#: ascendprep's own folder on a host: every file in it was written by ascendprep.
OWN_DIR = ENV_SH.rsplit("/", 1)[0] + "/"

SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/+-]+$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NPU_TARGET = re.compile(r"^npu (0|[1-9][0-9]{0,3})(?: bond(0|[1-9][0-9]{0,3}))?$")
_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ChangeError(ValueError):
    """A change that cannot be rendered safely, or a saved one that no diff could have made."""


def _q(value: object) -> str:
    return shlex.quote(str(value))


def _variables(variables: "tuple[VariableChange, ...]") -> str:
    """``changes A 1 → 2; adds B=x; drops C=y``: env.sh's variables a write changes, with their
    values as env.sh quotes them and control characters spelled out (a host's file may hold any)."""

    def shown(value: str) -> str:
        return visible(shlex.quote(value))

    changed = [
        f"{name} {shown(was)} → {shown(becomes)}"
        for name, was, becomes in variables
        if was is not None and becomes is not None
    ]
    added = [f"{name}={shown(becomes)}" for name, was, becomes in variables if was is None and becomes is not None]
    dropped = [f"{name}={shown(was)}" for name, was, becomes in variables if was is not None and becomes is None]
    parts = [
        f"{verb} {', '.join(items)}"
        for verb, items in (("changes", changed), ("adds", added), ("drops", dropped))
        if items
    ]
    return "; ".join(parts)


@dataclass(frozen=True)
class Change:
    """What every kind has: the node, the value seen before, and where it goes in the order."""

    node: str
    before: Any

    kind: ClassVar[str] = ""
    #: Position in the apply script (stable within a kind; NPU kinds sort by NPU after it).
    order: ClassVar[int] = 0

    @property
    def target(self) -> str:
        """What on the node is changed: ``npu 3``, a sysctl key, a path, a firewall."""
        raise NotImplementedError

    @property
    def after(self) -> Any:
        raise NotImplementedError

    @property
    def npu(self) -> Optional[int]:
        return None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.npu if self.npu is not None else self.target}"

    def fragment(self, hccn_tool: Optional[str]) -> str:
        """The line(s) of the apply script that make this change and report it as a step."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The plan file's and the journal's record: machine values only, no file content."""
        return {"kind": self.kind, "node": self.node, "target": self.target, "before": self.before, "after": self.after}

    def describe(self) -> str:
        """The line for people about this change (tables, the plan file's ``text``, stale notes)."""
        return self.key

    def entry(self) -> dict[str, Any]:
        """This change as JSON for people and tools: kind, target, values before and after, the line."""
        return {**self.to_dict(), "text": self.describe()}


def _seen(before: Any, part: str) -> Optional[str]:
    """One source of an NPU change's ``before`` (``device``/``file``); a hand-edited plan may
    hold anything there, so only text counts."""
    value = before.get(part) if isinstance(before, dict) else None
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------------------------
# NPU ports: hccn_tool set commands, which also rewrite /etc/hccn.conf


@dataclass(frozen=True)
class _NpuChange(Change):
    npu_id: int = 0
    #: Ascend 950: the slot of the NPU's bond device (``bond<slot>``, from ``npu-smi info -m``),
    #: which carries its IPv4 settings and names its /etc/hccn.conf keys; None before 950.
    bond_slot: Optional[int] = field(default=None, kw_only=True)

    @property
    def npu(self) -> Optional[int]:
        return self.npu_id

    @property
    def target(self) -> str:
        if self.bond_slot is not None:
            return f"npu {self.npu_id} bond{self.bond_slot}"
        return f"npu {self.npu_id}"

    def _arguments(self) -> str:
        raise NotImplementedError

    def _arguments_950(self) -> str:
        """The Ascend 950 set command after ``-i N`` (mode first: ``-s -<cmd> ...``)."""
        raise ChangeError(f"{self.kind} has no Ascend 950 command")

    def _command(self, hccn_tool: str, npu: int) -> str:
        """The step's command: one hccn_tool set command, cut off after HCCN_STEP_TIMEOUT.

        Ascend 950 puts the mode first and names the bond device: ``hccn_tool -s -ip -i N -d
        bond<slot> -address A -netmask M`` (hicann/driver ``ascend950/hccn_tool/tool_shell_ops.c``)."""
        if self.bond_slot is not None:
            return f"timeout {HCCN_STEP_TIMEOUT} {_q(hccn_tool)} {self._arguments_950()}"
        return f"timeout {HCCN_STEP_TIMEOUT} {_q(hccn_tool)} -i {npu} {self._arguments()}"

    def fragment(self, hccn_tool: Optional[str]) -> str:
        """A failed step of an NPU skips that NPU's later steps (they need its address)."""
        if not hccn_tool or not SAFE_PATH.match(hccn_tool):
            raise ChangeError(f"{self.node}: no usable hccn_tool path ({hccn_tool!r})")
        npu = int(self.npu_id)
        command = self._command(hccn_tool, npu)
        key = _q(self.key)
        guard = f"_ap_fail_{npu}"
        return "\n".join(
            [
                f'if [ -n "${{{guard}:-}}" ]; then _ap_skip {key} "skipped: an earlier step of npu {npu} failed";',
                f"else _ap_hccn {key} {command} || {guard}=1; fi",
            ]
        )


@dataclass(frozen=True)
class SetNpuAddress(_NpuChange):
    """``before``: ``{"device": "ip/netmask" | None, "file": "ip/netmask" | None}``."""

    address: str = ""
    netmask: str = ""
    kind: ClassVar[str] = "hccn.ip"
    order: ClassVar[int] = 0

    @property
    def after(self) -> str:
        return f"{self.address}/{self.netmask}"

    def describe(self) -> str:
        device, file = _seen(self.before, "device"), _seen(self.before, "file")
        shown = device if device and not device.startswith("/") else "none"
        file_ip = file.split("/")[0] if file else None
        device_ip = device.split("/")[0] if device else None
        if file_ip and file_ip != device_ip:
            note = f" ({HCCN_CONF} says {file_ip})"
        elif device_ip == self.address:
            note = f" (not in {HCCN_CONF})"
        else:
            note = ""
        return f"npu {self.npu}: ip {shown}{note} → {self.after}"

    def _arguments(self) -> str:
        return f"-ip -s address {_q(self.address)} netmask {_q(self.netmask)}"

    def _arguments_950(self) -> str:
        return (
            f"-s -ip -i {int(self.npu_id)} -d bond{int(self.bond_slot or 0)}"
            f" -address {_q(self.address)} -netmask {_q(self.netmask)}"
        )


@dataclass(frozen=True)
class SetNpuGateway(_NpuChange):
    """``before``: ``{"device": ip | None, "file": ip | None}``; ``gateway`` None removes it.

    hccn_tool has no command that removes a gateway: ``-gateway`` only sets (``-s``) and reads
    (``-g``), and ``-route`` refuses the default route ("Please use hccn_tool gateway cfg cmd!",
    docs/ascend-reference.md §1.4). What the reference gives is the file: the gateway is kept as
    ``gateway_N`` in /etc/hccn.conf, which the driver re-applies at its start and on ``-cfg
    recovery`` (§2). So a removal takes that line out of the file (``_ap_ungateway`` of the apply
    script: atomically, the replaced file kept as a backup) and then asks the device: a gateway
    it still routes through stays until its driver restarts, and the step fails saying so."""

    gateway: Optional[str] = ""
    kind: ClassVar[str] = "hccn.gateway"
    order: ClassVar[int] = 1

    @property
    def after(self) -> Optional[str]:
        return self.gateway

    @property
    def removes(self) -> bool:
        return self.gateway is None

    def describe(self) -> str:
        device = _seen(self.before, "device")
        if not self.removes:
            return f"npu {self.npu}: gateway {device or 'none'} → {self.after}"
        file = _seen(self.before, "file")
        if device is None:
            return (
                f"npu {self.npu}: gateway none ({HCCN_CONF} says {file}) → none: the line is taken out of {HCCN_CONF}"
            )
        kept = "the device keeps it until its driver restarts (hccn_tool cannot remove a gateway)"
        if file is None:
            return f"npu {self.npu}: gateway {device} (not in {HCCN_CONF}) → none: {kept}"
        note = f" ({HCCN_CONF} says {file})" if file != device else ""
        return f"npu {self.npu}: gateway {device}{note} → none: taken out of {HCCN_CONF}; {kept}"

    def _arguments(self) -> str:
        return f"-gateway -s gateway {_q(self.gateway)}"

    def _arguments_950(self) -> str:
        return f"-s -gateway -i {int(self.npu_id)} -d bond{int(self.bond_slot or 0)} -address {_q(self.gateway)}"

    def _command(self, hccn_tool: str, npu: int) -> str:
        if self.gateway is None:
            slot = "" if self.bond_slot is None else f" {int(self.bond_slot)}"
            return f"_ap_ungateway {npu} {_q(hccn_tool)} {_q(HCCN_CONF)}{slot}"
        return super()._command(hccn_tool, npu)


@dataclass(frozen=True)
class SetNpuNetdetect(_NpuChange):
    """``before``: ``{"device": ip | None, "file": ip | None}``."""

    address: str = ""
    kind: ClassVar[str] = "hccn.netdetect"
    order: ClassVar[int] = 2

    @property
    def after(self) -> str:
        return self.address

    def describe(self) -> str:
        return f"npu {self.npu}: netdetect {_seen(self.before, 'device') or 'none'} → {self.after}"

    def _arguments(self) -> str:
        return f"-netdetect -s address {_q(self.address)}"

    def _arguments_950(self) -> str:
        return f"-s -netdetect -i {int(self.npu_id)} -address {_q(self.address)}"


@dataclass(frozen=True)
class SetNpuTls(_NpuChange):
    """``before``: the effective switch, 0 or 1 (0 without certificates)."""

    enable: int = 0
    kind: ClassVar[str] = "hccn.tls"
    order: ClassVar[int] = 3

    @property
    def after(self) -> int:
        return self.enable

    def describe(self) -> str:
        return f"npu {self.npu}: tls switch {'unknown' if self.before is None else self.before} → {self.after}"

    def _arguments(self) -> str:
        return f"-tls -s enable {int(self.enable)}"


# --------------------------------------------------------------------------------------------
# Host settings


@dataclass(frozen=True)
class SetSysctl(Change):
    """A live kernel value (``before``: what the kernel printed, stripped)."""

    name: str = ""
    value: str = ""
    kind: ClassVar[str] = "sysctl"
    order: ClassVar[int] = 4

    @property
    def target(self) -> str:
        return self.name

    @property
    def after(self) -> str:
        return self.value

    def describe(self) -> str:
        note = "" if sysctl_rules.is_allowed_key(self.name) else " (opt-in: outside the HCCL allow-list)"
        return f"sysctl {self.name} {self.before or '(empty)'} → {self.value}{note}"

    def fragment(self, hccn_tool: Optional[str]) -> str:
        problem = sysctl_rules.key_problem(self.name, [self.name]) or sysctl_rules.value_problem(self.name, self.value)
        if problem:
            raise ChangeError(f"{self.node}: {problem}")
        proc = "/proc/sys/" + self.name.replace(".", "/")  # what `sysctl -w` writes (the key is checked above)
        return f"_ap_step {_q(self.key)} _ap_sysctl {_q(self.name)} {_q(self.value)} {_q(proc)}"


#: One variable an env.sh write adds, changes or drops: (name, value before, value after), None
#: for "not exported".
VariableChange = Tuple[str, Optional[str], Optional[str]]


def variable_changes(before: Mapping[str, str], after: Mapping[str, str]) -> Tuple[VariableChange, ...]:
    """The variables that differ between two env.sh files: those added or changed, in ``after``'s
    order, then those dropped."""
    changed: list[VariableChange] = [
        (name, before.get(name), value) for name, value in after.items() if before.get(name) != value
    ]
    dropped: list[VariableChange] = [(name, value, None) for name, value in before.items() if name not in after]
    return tuple(changed + dropped)


@dataclass(frozen=True)
class WriteFile(Change):
    """A managed file; ``before``/``after`` are sha256 digests (``before`` None: absent).

    The content travels only in a fresh diff, never through a plan file (one read back has
    ``content`` None and renders no fragment). ``variables`` (env.sh only): the variables the
    write adds, changes or drops, so the plan can say so; None when the host's were not read.
    They are words for people: what a saved plan is checked by is the digests."""

    path: str = ""
    sha256: str = ""
    content: Optional[str] = field(default=None, compare=False, repr=False)
    mode: int = field(default=0o644, compare=False)
    variables: Optional[Tuple[VariableChange, ...]] = field(default=None, compare=False)
    kind: ClassVar[str] = "file"
    order: ClassVar[int] = 5

    @property
    def target(self) -> str:
        return self.path

    @property
    def after(self) -> str:
        return self.sha256

    def describe(self) -> str:
        action = "create" if self.before is None else "update"
        if self.variables is None:
            return f"{self.path}: {action}"
        return (
            f"{self.path}: {action}: {_variables(self.variables)}"
            if self.variables
            else f"{self.path}: {action} (its variables stay as they are)"
        )

    def to_dict(self) -> dict[str, Any]:
        record = super().to_dict()
        if self.variables is not None:
            record["variables"] = {name: [was, becomes] for name, was, becomes in self.variables}
        return record

    def fragment(self, hccn_tool: Optional[str]) -> str:
        if not SAFE_PATH.match(self.path):
            raise ChangeError(f"{self.node}: refusing to write {self.path!r}")
        if self.content is None:
            raise ChangeError(
                f"{self.node}: {self.path}: no content to write (a change read from a plan file is never run)"
            )
        ours = 1 if self.path.startswith(OWN_DIR) else 0
        return f"_ap_step {_q(self.key)} _ap_write {_q(self.path)} {int(self.mode):o} {_q(self.content)} {ours}"


#: The command that switches each firewall front end off for good.
_FIREWALL_OFF = {"ufw": "ufw disable", "firewalld": "systemctl disable --now firewalld"}


@dataclass(frozen=True)
class DisableFirewall(Change):
    """``before``: True (the front end is active)."""

    tool: str = ""
    kind: ClassVar[str] = "firewall"
    order: ClassVar[int] = 6

    @property
    def target(self) -> str:
        return self.tool

    @property
    def after(self) -> bool:
        return False

    def describe(self) -> str:
        return f"firewall {self.tool}: active → disabled"

    def fragment(self, hccn_tool: Optional[str]) -> str:
        command = _FIREWALL_OFF.get(self.tool)
        if command is None:
            raise ChangeError(f"unknown firewall {self.tool!r}")
        return f"_ap_step {_q(self.key)} {command}"


KINDS: dict[str, type[Change]] = {
    cls.kind: cls
    for cls in (SetNpuAddress, SetNpuGateway, SetNpuNetdetect, SetNpuTls, SetSysctl, WriteFile, DisableFirewall)
}
#: The NPU kinds in the order apply sets them (a later one may see an earlier one's doing).
NPU_KINDS = tuple(
    kind for kind, cls in sorted(KINDS.items(), key=lambda item: item[1].order) if issubclass(cls, _NpuChange)
)


def ordered(changes: list[Change]) -> list[Change]:
    """Changes in the order the script runs them (stable within a kind)."""
    return sorted(changes, key=lambda c: (c.order, c.npu if c.npu is not None else -1))


# --------------------------------------------------------------------------------------------
# Reading a saved change back (plan files are hostile input)


def _ipv4(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ChangeError(f"{what} must be an IPv4 address")
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise ChangeError(f"{what} {value!r} is not an IPv4 address") from None


def _npu(target: Any) -> int:
    match = _NPU_TARGET.match(target) if isinstance(target, str) else None
    if not match:
        raise ChangeError("target must be 'npu N' (or 'npu N bondS' on Ascend 950)")
    return int(match.group(1))


def _bond(target: Any) -> Optional[int]:
    """The bond slot of an Ascend 950 NPU target (``npu 3 bond2``); None otherwise."""
    match = _NPU_TARGET.match(target) if isinstance(target, str) else None
    return int(match.group(2)) if match and match.group(2) is not None else None


def _plain_value(value: Any, what: str) -> Any:
    """A machine value: text, a number, true/false, null, or an object of those (one level)."""
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, dict) and all(
        isinstance(k, str) and (v is None or isinstance(v, (str, int, bool))) for k, v in value.items()
    ):
        return dict(value)
    raise ChangeError(f"{what} must be text, a number or an object of those")


def _saved_variables(value: Any) -> Optional[Tuple[VariableChange, ...]]:
    """An env.sh change's ``variables`` as a plan file holds them: ``{NAME: [before, after]}``,
    each text or null (not both, and not equal); absent in plans of other files and older plans."""
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) > 2 * ENV_SH_MAX_VARIABLES:
        raise ChangeError(f"variables must be an object of at most {2 * ENV_SH_MAX_VARIABLES} names")
    found = []
    for name, pair in value.items():
        if not _VARIABLE_NAME.match(name) or not isinstance(pair, list) or len(pair) != 2:
            raise ChangeError(f"variables.{str(name)[:64]} must be [value before, value after] of a variable name")
        was, becomes = pair
        if not all(v is None or isinstance(v, str) for v in pair) or was == becomes:
            raise ChangeError(f"variables.{name}: before and after must differ, each text or null")
        found.append((name, was, becomes))
    return tuple(found)


def from_saved(kind: Any, node: str, target: Any, before: Any, after: Any, variables: Any = None) -> Change:
    """The typed change a plan file records; anything no diff could have written is a ChangeError."""
    before = _plain_value(before, "before")
    if variables is not None and (kind != WriteFile.kind or target != ENV_SH):
        raise ChangeError(f"only a change of {ENV_SH} lists variables")
    if kind == SetNpuAddress.kind:
        if not isinstance(after, str) or after.count("/") != 1:
            raise ChangeError("after must be 'address/netmask'")
        address, netmask = after.split("/")
        return SetNpuAddress(
            node,
            before,
            _npu(target),
            _ipv4(address, "after's address"),
            _ipv4(netmask, "after's netmask"),
            bond_slot=_bond(target),
        )
    if kind == SetNpuGateway.kind:
        return SetNpuGateway(
            node, before, _npu(target), None if after is None else _ipv4(after, "after"), bond_slot=_bond(target)
        )
    if kind == SetNpuNetdetect.kind:
        return SetNpuNetdetect(node, before, _npu(target), _ipv4(after, "after"), bond_slot=_bond(target))
    if kind == SetNpuTls.kind:
        if after not in (0, 1) or isinstance(after, bool):
            raise ChangeError("after must be 0 or 1")
        if _bond(target) is not None:
            raise ChangeError("the TLS switch has no Ascend 950 command here")
        return SetNpuTls(node, before, _npu(target), after)
    if kind == SetSysctl.kind:
        if not isinstance(target, str) or not isinstance(after, str):
            raise ChangeError("target and after must be text")
        return SetSysctl(node, before, target, after)
    if kind == WriteFile.kind:
        if not isinstance(target, str) or not SAFE_PATH.match(target):
            raise ChangeError("target must be an absolute path of plain characters")
        if not isinstance(after, str) or not _SHA256.match(after):
            raise ChangeError("after must be a sha256 digest")
        return WriteFile(node, before, target, after, variables=_saved_variables(variables))
    if kind == DisableFirewall.kind:
        if target not in _FIREWALL_OFF or after is not False:
            raise ChangeError(f"a firewall change targets {' or '.join(_FIREWALL_OFF)} and sets false")
        return DisableFirewall(node, before, target)
    raise ChangeError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
