"""The files ascendprep writes on every node: ``env.sh``, ``set_env.sh`` and the sysctl drop-in.

``env.sh`` is identical on every node: it locates CANN the way the script of the Ascend PyTorch
migration guide does (``/etc/Ascend/ascend_cann_install.info`` → ``ascend-toolkit`` → ``nnae``;
section 环境变量配置, https://www.hiascend.com/document/detail/zh/Pytorch/60RC2/ptmoddevg/trainingmigrguide/PT_LMTMOG_0018.html)
and sets the HCCL and log variables. ``set_env.sh`` is per node: the rendezvous
(MASTER_ADDR/PORT, NNODES, NODE_RANK, NPROC_PER_NODE), the host NIC HCCL uses, the host NIC
gloo and NCCL use (:func:`render_interface_binding`), and the rank table; it sources ``env.sh``. Both are POSIX sh so that ``.``, ``source`` and non-bash shells work.
Every value is quoted with :func:`shlex.quote`.
"""

from __future__ import annotations

import ipaddress
import shlex
from typing import Mapping, Optional, Union

from ascendprep.base import limits
from ascendprep.base.paths import ENV_SH, RANK_TABLE

MANAGED_HEADER = "# Managed by ascendprep: changes are overwritten by 'ascendprep apply'."

#: HCCL and log settings for training, from that migration guide and ModelZoo's env_npu.sh
#: (docs/ascend-reference.md §5.2). HCCL_CONNECT_TIMEOUT is raised from its default of 120 s because node start
#: skew on large clusters exceeds it ("wait socket establish timeout").
DEFAULT_ENV: dict[str, str] = {
    "HCCL_WHITELIST_DISABLE": "1",
    "HCCL_CONNECT_TIMEOUT": "1200",
    "ASCEND_SLOG_PRINT_TO_STDOUT": "0",
    "ASCEND_GLOBAL_LOG_LEVEL": "3",
    "ASCEND_GLOBAL_EVENT_ENABLE": "0",
}

_LOCATE_CANN = """\
# Locate CANN as the Ascend PyTorch guide does: the install record, else the default prefix.
CANN_INSTALL_PATH_CONF=/etc/Ascend/ascend_cann_install.info
if [ -f "$CANN_INSTALL_PATH_CONF" ]; then
  DEFAULT_CANN_INSTALL_PATH=$(grep Install_Path "$CANN_INSTALL_PATH_CONF" | cut -d "=" -f 2)
else
  DEFAULT_CANN_INSTALL_PATH=/usr/local/Ascend
fi
CANN_INSTALL_PATH=${ASCENDPREP_CANN_PATH:-$DEFAULT_CANN_INSTALL_PATH}
if [ -d "$CANN_INSTALL_PATH/ascend-toolkit/latest" ] && [ -f "$CANN_INSTALL_PATH/ascend-toolkit/set_env.sh" ]; then
  . "$CANN_INSTALL_PATH/ascend-toolkit/set_env.sh"
elif [ -f "$CANN_INSTALL_PATH/nnae/set_env.sh" ]; then
  . "$CANN_INSTALL_PATH/nnae/set_env.sh"
else
  echo "ascendprep env.sh: no CANN set_env.sh under $CANN_INSTALL_PATH" >&2
fi
"""


#: HCCL_CONNECT_TIMEOUT's range and default, in seconds (docs/ascend-reference.md §5.2, HCCL ``hccl_env``
#: docs: "range [120, 7200]; effective = value + 20 s", default 120).
HCCL_CONNECT_TIMEOUT_MIN_S = 120
HCCL_CONNECT_TIMEOUT_MAX_S = 7200
HCCL_CONNECT_TIMEOUT_DEFAULT_S = 120


def required_connect_timeout(nodes: int) -> int:
    """Seconds of HCCL_CONNECT_TIMEOUT a cluster of ``nodes`` needs: the time it takes to start.

    ``JOB_START_BASE_S + JOB_START_PER_NODE_S × nodes``, within HCCL's range. Why: every rank
    waits in link setup until its peers arrive, so the timeout must cover the skew between the
    first and the last rank to get there. That skew has a fixed part (importing torch/torch_npu,
    loading CANN's libraries and the model on a slow node: minutes, not the default 120 s, in
    the field threads of "wait socket establish timeout" / EI0006) and a part that grows with the
    node count (launchers start nodes one after the other over SSH, and every node reads the
    same checkpoint from shared storage at once).
    """
    wanted = limits.JOB_START_BASE_S + limits.JOB_START_PER_NODE_S * max(1, nodes)
    return max(HCCL_CONNECT_TIMEOUT_MIN_S, min(HCCL_CONNECT_TIMEOUT_MAX_S, wanted))


def connect_timeout_for(nodes: int) -> int:
    """What env.sh exports: the usual 1200 s, or more when the cluster needs more to start."""
    return max(int(DEFAULT_ENV["HCCL_CONNECT_TIMEOUT"]), required_connect_timeout(nodes))


def _exports(values: Mapping[str, Union[str, int]]) -> str:
    return "".join(f"export {key}={shlex.quote(str(value))}\n" for key, value in values.items())


def render_env_sh(extra: Mapping[str, str], nodes: Optional[int] = None) -> str:
    """The cluster-wide ``env.sh``: CANN, then HCCL/log defaults, then the inventory's ``env:``.

    ``nodes``: the cluster's node count; HCCL_CONNECT_TIMEOUT is raised to what it needs to start
    (:func:`connect_timeout_for`) when that is above the default.
    """
    values = dict(DEFAULT_ENV)
    if nodes is not None:
        values["HCCL_CONNECT_TIMEOUT"] = str(connect_timeout_for(nodes))
    values.update(extra)
    return f"{MANAGED_HEADER}\n# Cluster-wide environment for Ascend training; sourced by set_env.sh.\n\n{_LOCATE_CANN}\n{_exports(values)}"


def render_set_env_sh(rendezvous: Mapping[str, Union[str, int]], bind_address: Optional[str] = None) -> str:
    """A node's ``set_env.sh``: sources ``env.sh`` and exports this node's rendezvous values.

    ``bind_address``: the node's inventory address; when given, gloo and NCCL are bound to the
    interface that holds it (:func:`render_interface_binding`).
    """
    binding = render_interface_binding(bind_address) if bind_address is not None else ""
    gloo = render_gloo_from_hccl_ifname(str(rendezvous["HCCL_SOCKET_IFNAME"])) if "HCCL_SOCKET_IFNAME" in rendezvous else ""
    return (
        f"{MANAGED_HEADER}\n# This node's part of the training job; source it before torchrun.\n\n"
        f". {shlex.quote(ENV_SH)}\n{_exports(rendezvous)}{gloo}{binding}"
    )


def render_gloo_from_hccl_ifname(spec: str) -> str:
    """Lines that give gloo the NIC ``HCCL_SOCKET_IFNAME`` names, so HCCL and gloo use one NIC.

    Why: torch_npu's CPU-side groups run on gloo, which does not read HCCL's variable; left to
    itself it follows the hostname, which may be loopback ("Using the loopback address as
    fallback", vllm issue 7074) or the wrong network. gloo takes one concrete interface name,
    not HCCL's prefix (``eth``) or exclusion (``^docker``) forms (``Unable to find address for:
    ^lo``), so only an exact name is passed on: ``=eth0``, or ``eth0`` where that interface
    exists when the file is sourced. One NIC for every socket follows gpustack PR 3311. A value
    set before is kept; other forms leave gloo to the address binding below.
    """
    items = spec.split(",")
    if len(items) != 1 or spec.startswith("^"):
        return ""
    name = spec[1:] if spec.startswith("=") else spec
    if not name or not all(ch.isalnum() or ch in "_.:-" for ch in name):
        return ""
    q = shlex.quote
    return (
        "# gloo on the NIC HCCL_SOCKET_IFNAME names (gloo takes one exact interface name).\n"
        f'if [ -z "${{GLOO_SOCKET_IFNAME-}}" ] && [ -e /sys/class/net/{q(name)} ]; then export GLOO_SOCKET_IFNAME={q(name)}; fi\n'
    )


#: Prints the interface holding address ``a`` (``ip -o addr``: ``2: eth0 inet 10.0.0.11/24 ...``;
#: a veth may read ``eth0@if5``).
_IFNAME_OF_ADDRESS_AWK = '{ split($4, p, "/"); if (p[1] == a) { sub(/@.*/, "", $2); print $2; exit } }'


def render_interface_binding(address: str) -> str:
    """Shell lines that bind gloo's and NCCL's host sockets to the NIC holding ``address``.

    Why: gloo and NCCL advertise the address their hostname resolves to; with Debian's
    ``127.0.1.1 <hostname>`` line, or a hostname that does not resolve, that is loopback and
    the ranks never meet ("Gloo connectFullMesh failed ... remote=[127.0.0.1]"). HCCL is bound
    by ``HCCL_IF_IP`` already. The interface is looked up when the file is sourced, not at plan
    time, so the file depends on the inventory alone: ``plan --offline`` shows it byte for byte,
    and a renamed NIC does not make it stale. A value the user set before (or in ``env:``) is
    kept. ``NCCL_SOCKET_IFNAME`` gets ``=`` (exact name: without it, ``eth1`` also matches
    ``eth10``).
    """
    address = str(ipaddress.IPv4Address(address))
    q = shlex.quote
    return (
        f"# Host NIC for gloo and NCCL: the one holding this node's address {address}, whatever the\n"
        "# hostname resolves to (127.0.1.1 or nothing would make the ranks miss each other).\n"
        f"ascendprep_ifname=$(PATH=\"$PATH:/usr/sbin:/sbin\" ip -o addr show 2>/dev/null | awk -v a={q(address)} "
        f"{q(_IFNAME_OF_ADDRESS_AWK)})\n"
        'if [ -n "$ascendprep_ifname" ]; then\n'
        '  export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-$ascendprep_ifname}"\n'
        '  export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-=$ascendprep_ifname}"\n'
        "else\n"
        f"  echo {q(f'ascendprep set_env.sh: no interface holds {address}; GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME are not set')} >&2\n"
        "fi\n"
        "unset ascendprep_ifname\n"
    )


def rendezvous_values(*, master_addr: str, master_port: int, nnodes: int, node_rank: int, nproc_per_node: int, if_ip: str | None, socket_ifname: str | None, rank_table: bool = False, logic_superpod: str | None = None) -> dict[str, Union[str, int]]:
    """The variables of ``set_env.sh`` in the order they are written.

    ``RANK_TABLE_FILE`` only with ``rank_table`` (the inventory's ``training.rank_table``): when
    it is set, torch_npu and HCCL initialise from that file instead of the rendezvous, and a
    table that does not match the job fails with EI0014 (issue 17: "rank-table mode by accident").
    ``HCCL_LOGIC_SUPERPOD_ID`` (A3, the node's ``logical_super_pod``) only without a rank table.
    """
    values: dict[str, Union[str, int]] = {
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": master_port,
        "NNODES": nnodes,
        "NODE_RANK": node_rank,
        "NPROC_PER_NODE": nproc_per_node,
    }
    if socket_ifname:
        values["HCCL_SOCKET_IFNAME"] = socket_ifname
    elif if_ip:
        values["HCCL_IF_IP"] = if_ip
    if rank_table:
        values["RANK_TABLE_FILE"] = RANK_TABLE
    elif logic_superpod is not None:
        # HCCL reads it only without a rank table (then the table's super_pod_list says it).
        values["HCCL_LOGIC_SUPERPOD_ID"] = logic_superpod
    return values


def render_sysctl_conf(values: Mapping[str, Union[str, int]]) -> str:
    """The ``/etc/sysctl.d`` drop-in that makes the tuning survive a reboot."""
    lines = "".join(f"{key} = {value}\n" for key, value in values.items())
    return f"{MANAGED_HEADER}\n# Kernel settings for HCCL (somaxconn/backlog for the rendezvous burst, reserved HCCL ports).\n{lines}"


# --- A3 HCCL variables (docs/a3-superpod.md §3) --------------------------------------------------

#: ``HCCL_OP_EXPANSION_MODE`` values HCCL knows; anything else silently falls back to the default.
OP_EXPANSION_MODES = ("AI_CPU", "AICPU_CacheDisable", "AIV", "HOST")
#: ``HCCL_LOGIC_SUPERPOD_ID`` is a string shorter than this (HCCL docs).
LOGIC_SUPERPOD_ID_MAX_CHARS = 128
#: What ``HCCL_INTER_HCCS_DISABLE`` accepts.
HCCS_DISABLE_VALUES = ("TRUE", "FALSE")


def op_retry_levels(value: Optional[str]) -> dict[str, int]:
    """``HCCL_OP_RETRY_ENABLE="L1:1,L2:0"`` → ``{"L1": 1, "L2": 0}``; unset → ``{}``.

    L1 is retry between servers, L2 between super-pods; each 0 or 1. Raises ValueError with a
    readable reason for anything else.
    """
    if value is None or value == "":
        return {}
    levels: dict[str, int] = {}
    for item in value.split(","):
        level, _, flag = item.strip().partition(":")
        if level not in ("L1", "L2") or flag not in ("0", "1") or level in levels:
            raise ValueError(f"'{value}' is not of the form L1:0|1,L2:0|1 (such as \"L1:1,L2:1\")")
        levels[level] = int(flag)
    return levels


def hccl_env_problems(env: Mapping[str, str], *, a3: bool, physical_pods: int, rank_table: bool) -> list[tuple[str, str]]:
    """(variable, message) for A3 HCCL settings in the inventory's ``env:`` that HCCL would
    ignore, misread or that contradict the cluster; checked at load (located at ``env.<NAME>``).

    ``physical_pods``: the super-pods the inventory's nodes are in (0 when none are given).
    """
    problems: list[tuple[str, str]] = []
    hccs = env.get("HCCL_INTER_HCCS_DISABLE")
    if hccs is not None and hccs not in HCCS_DISABLE_VALUES:
        problems.append(("HCCL_INTER_HCCS_DISABLE", f"'{hccs}' is not TRUE or FALSE (TRUE: servers of a super-pod talk over RoCE instead of HCCS)"))
    if hccs is not None and not a3:
        problems.append(("HCCL_INTER_HCCS_DISABLE", "only Atlas A3 super-pods read it (there is no HCCS between servers on this product)"))
    logic = env.get("HCCL_LOGIC_SUPERPOD_ID")
    if logic is not None:
        if not a3:
            problems.append(("HCCL_LOGIC_SUPERPOD_ID", "only Atlas A3 super-pods read it"))
        elif len(logic) >= LOGIC_SUPERPOD_ID_MAX_CHARS:
            problems.append(("HCCL_LOGIC_SUPERPOD_ID", f"is {len(logic)} characters; HCCL takes fewer than {LOGIC_SUPERPOD_ID_MAX_CHARS}"))
        elif physical_pods > 1:
            problems.append(("HCCL_LOGIC_SUPERPOD_ID", f"one value for the whole cluster joins its {physical_pods} physical super-pods into one logical pod: HCCL then picks the HCCS vNIC link between them and both ends time out; split pods with nodes[].logical_super_pod instead"))
        elif rank_table:
            problems.append(("HCCL_LOGIC_SUPERPOD_ID", "HCCL reads it only without a rank table (training.rank_table is true); split pods with nodes[].logical_super_pod, which the rank table's super_pod_list carries"))
    mode = env.get("HCCL_OP_EXPANSION_MODE")
    if mode is not None and mode not in OP_EXPANSION_MODES:
        problems.append(("HCCL_OP_EXPANSION_MODE", f"'{mode}' is not one of {', '.join(OP_EXPANSION_MODES)}: HCCL silently falls back to its default"))
    try:
        retry = op_retry_levels(env.get("HCCL_OP_RETRY_ENABLE"))
    except ValueError as exc:
        problems.append(("HCCL_OP_RETRY_ENABLE", str(exc)))
        retry = {}
    if any(retry.values()):
        effective = mode if mode is not None else ("AI_CPU" if a3 else None)
        if effective != "AI_CPU":
            where = "HCCL_OP_EXPANSION_MODE" if mode is not None else "HCCL_OP_RETRY_ENABLE"
            problems.append((where, f"op-retry (HCCL_OP_RETRY_ENABLE={env['HCCL_OP_RETRY_ENABLE']}) works only with HCCL_OP_EXPANSION_MODE=AI_CPU, not {effective or 'the default'}: set HCCL_OP_EXPANSION_MODE: AI_CPU"))
    if a3 and "HCCL_INTRA_PCIE_ENABLE" in env:
        problems.append(("HCCL_INTRA_PCIE_ENABLE", "is not supported on Atlas A3 (HCCL docs): remove it (HCCL_INTER_HCCS_DISABLE chooses RoCE over HCCS there)"))
    return problems
