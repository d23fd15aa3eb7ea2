"""Where things live on an Ascend host: the single source for probes, apply and desired state.

The managed files are the ones ascendprep writes; the gather script reports whether each
exists and its sha256, so plan can tell "ours and unchanged" from "missing" or "edited".
"""

from __future__ import annotations

#: Environment a training job sources (HCCL_* variables and friends), written by apply.
ENV_SH = "/etc/ascendprep/env.sh"
#: Wrapper that sources the right CANN ``set_env.sh`` (toolkit, nnae or the cann layout).
SET_ENV_SH = "/etc/ascendprep/set_env.sh"
#: The HCCL rank table for this cluster.
RANK_TABLE = "/etc/ascendprep/rank_table.json"
#: Persisted kernel settings (somaxconn, SYN backlog, reserved HCCL ports).
SYSCTL_FILE = "/etc/sysctl.d/90-ascendprep.conf"

#: Files ascendprep manages on every host, in a stable order.
MANAGED_FILES = (ENV_SH, SET_ENV_SH, RANK_TABLE)

#: What hccn_tool re-applies at driver start and on ``-cfg recovery`` (fixed path in its source).
HCCN_CONF = "/etc/hccn.conf"
#: OS identification (the gather falls back to ``/usr/lib/os-release``, as os-release(5) says).
OS_RELEASE = "/etc/os-release"

#: Root installs; non-root installs use ``~/Ascend`` (pass ``ascend_home="~/Ascend"``).
DEFAULT_ASCEND_HOME = "/usr/local/Ascend"
#: hccn_tool inside the driver package, used when it is not on PATH.
HCCN_TOOL_IN_HOME = "driver/tools/hccn_tool"
#: npu-smi inside the driver package, used when it is not on PATH.
NPU_SMI_IN_HOME = "driver/tools/npu-smi"

#: Version files relative to the Ascend home (docs/ascend-reference.md §4.6). The toolkit path takes the arch.
DRIVER_VERSION_FILE = "driver/version.info"
FIRMWARE_VERSION_FILE = "firmware/version.info"
TOOLKIT_INFO_FILE = "ascend-toolkit/latest/{arch}-linux/ascend_toolkit_install.info"
NNAE_INFO_FILE = "nnae/latest/ascend_nnae_install.info"
#: Inside ``<home>/cann`` and ``<home>/cann-<ver>`` (newer layouts): what ACL reports as CANN's version.
CANN_RUNTIME_VERSION_FILE = "share/info/runtime/version.info"

#: Kernel settings read live from /proc/sys (no dependency on the sysctl binary).
SYSCTL_KEYS = (
    "net.core.somaxconn",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.ip_local_reserved_ports",
)


def proc_sys_path(key: str) -> str:
    """``net.core.somaxconn`` → ``/proc/sys/net/core/somaxconn``."""
    return "/proc/sys/" + key.replace(".", "/")
