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
    gloo = (
        render_gloo_from_hccl_ifname(str(rendezvous["HCCL_SOCKET_IFNAME"]))
        if "HCCL_SOCKET_IFNAME" in rendezvous
        else ""
    )
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
        f'ascendprep_ifname=$(PATH="$PATH:/usr/sbin:/sbin" ip -o addr show 2>/dev/null | awk -v a={q(address)} '
        f"{q(_IFNAME_OF_ADDRESS_AWK)})\n"
        'if [ -n "$ascendprep_ifname" ]; then\n'
        '  export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-$ascendprep_ifname}"\n'
        '  export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-=$ascendprep_ifname}"\n'
        "else\n"
        f"  echo {q(f'ascendprep set_env.sh: no interface holds {address}; GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME are not set')} >&2\n"
        "fi\n"
        "unset ascendprep_ifname\n"
    )


def rendezvous_values(
    *,
    master_addr: str,
    master_port: int,
    nnodes: int,
    node_rank: int,
    nproc_per_node: int,
    if_ip: str | None,
    socket_ifname: str | None,
    rank_table: bool = False,
    logic_superpod: str | None = None,
) -> dict[str, Union[str, int]]:
    """The variables of ``set_env.sh`` in the order they are written.

    ``RANK_TABLE_FILE`` only with ``rank_table`` (the inventory's ``training.rank_table``): when
    it is set, torch_npu and HCCL initialise from that file instead of the rendezvous, and a
    table that does not match the job fails with EI0014 ("rank-table mode by accident").
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
