"""The files ascendprep writes on every node: ``env.sh``, ``set_env.sh`` and the sysctl drop-in.

``env.sh`` is identical on every node: it locates CANN the way the seed guide's script does
(``/etc/Ascend/ascend_cann_install.info`` → ``ascend-toolkit`` → ``nnae``, section 环境变量配置 of
``seeds/002``) and sets the HCCL and log variables. ``set_env.sh`` is per node: the rendezvous
(MASTER_ADDR/PORT, NNODES, NODE_RANK, NPROC_PER_NODE), the host NIC HCCL uses, and the rank
table; it sources ``env.sh``. Both are POSIX sh so that ``.``, ``source`` and non-bash shells work.
Every value is quoted with :func:`shlex.quote`.
"""

from __future__ import annotations

import shlex
from typing import Mapping, Union

from ascendprep.probes.paths import ENV_SH, RANK_TABLE

MANAGED_HEADER = "# Managed by ascendprep: changes are overwritten by 'ascendprep apply'."

#: HCCL and log settings for training, from the seed guide and ModelZoo's env_npu.sh
#: (reference §5.2). HCCL_CONNECT_TIMEOUT is raised from its default of 120 s because node start
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


def _exports(values: Mapping[str, Union[str, int]]) -> str:
    return "".join(f"export {key}={shlex.quote(str(value))}\n" for key, value in values.items())


def render_env_sh(extra: Mapping[str, str]) -> str:
    """The cluster-wide ``env.sh``: CANN, then HCCL/log defaults, then the inventory's ``env:``."""
    values = dict(DEFAULT_ENV)
    values.update(extra)
    return f"{MANAGED_HEADER}\n# Cluster-wide environment for Ascend training; sourced by set_env.sh.\n\n{_LOCATE_CANN}\n{_exports(values)}"


def render_set_env_sh(rendezvous: Mapping[str, Union[str, int]]) -> str:
    """A node's ``set_env.sh``: sources ``env.sh`` and exports this node's rendezvous values."""
    return (
        f"{MANAGED_HEADER}\n# This node's part of the training job; source it before torchrun.\n\n"
        f". {shlex.quote(ENV_SH)}\n{_exports(rendezvous)}"
    )


def rendezvous_values(*, master_addr: str, master_port: int, nnodes: int, node_rank: int, nproc_per_node: int, if_ip: str | None, socket_ifname: str | None) -> dict[str, Union[str, int]]:
    """The variables of ``set_env.sh`` in the order they are written."""
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
    values["RANK_TABLE_FILE"] = RANK_TABLE
    return values


def render_sysctl_conf(values: Mapping[str, Union[str, int]]) -> str:
    """The ``/etc/sysctl.d`` drop-in that makes the tuning survive a reboot."""
    lines = "".join(f"{key} = {value}\n" for key, value in values.items())
    return f"{MANAGED_HEADER}\n# Kernel settings for HCCL (somaxconn/backlog for the rendezvous burst, reserved HCCL ports).\n{lines}"
