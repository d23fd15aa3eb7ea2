"""The parts of a lab node that the ``job.*`` checks read, and the texts of their faults.

* NNAL/ATB: ``<home>/nnal/atb/latest/version.info`` of the node's CANN release (the format of
  public captures: ``Ascend-cann-atb : 8.2.RC2`` / ``Ascend-cann-atb Version : 8.2.RC2.B030``),
  and a driver library directory (``driver/lib64``) for containers to miss.
* A torch_npu stand-in that imports in *login shells only*: ``/etc/profile.d`` puts its folder on
  ``PYTHONPATH``. ``verify``'s import probe runs a login shell (as users' jobs do), so it sees
  the stand-in; the all-reduce worker runs non-login and keeps seeing metadata only, so it still
  falls back to gloo as before. The ``torch-npu-import`` fault swaps in a stand-in whose import
  fails with the undefined-symbol text a torch/torch_npu mismatch prints.
* Container wrappers (``container-hides`` fault): ``lab-container`` runs a command in a mount
  namespace of its own and sees everything (the unlike variant); ``lab-container-hiding`` also
  lays empty tmpfs over the driver folder and ``/etc/ascendprep``, as a container started
  without those mounts.
* Site-profile snippets: a short ``HCCL_CONNECT_TIMEOUT`` and a stray ``RANK_TABLE_FILE``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

STANDIN_DIR = "/usr/local/lib/ascendprep-lab/python"
STANDIN_INIT = f"{STANDIN_DIR}/torch_npu/__init__.py"
STANDIN_PROFILE = "/etc/profile.d/ascendprep-lab-torch-npu.sh"
NNAL_VERSION_INFO = "usr/local/Ascend/nnal/atb/latest/version.info"
DRIVER_LIB = "usr/local/Ascend/driver/lib64/driver/libascend_hal.so"
CONTAINER = "/usr/local/bin/lab-container"
CONTAINER_HIDING = "/usr/local/bin/lab-container-hiding"
#: What lab-container-hiding lays an empty tmpfs over.
HIDDEN_BY_CONTAINER = ("/usr/local/Ascend/driver", "/etc/ascendprep")
SHORT_TIMEOUT_PROFILE = "/etc/profile.d/zz-ascendprep-lab-hccl-timeout.sh"
SHORT_TIMEOUT_S = 60
STRAY_RANK_TABLE = "/etc/ascendprep/hccl_8p_01234567_10.99.0.1.json"
STRAY_RANK_TABLE_PROFILE = "/etc/profile.d/zz-ascendprep-lab-rank-table.sh"
UNDEFINED_SYMBOL = "undefined symbol: _ZN3c104impl3cow11cow_deleterEPv"


def nnal_version_info(cann: str) -> str:
    return f"    Ascend-cann-atb : {cann}\n    Ascend-cann-atb Version : {cann}.B030\n    Platform : aarch64\n"


def install_nnal_and_driver_libs(root: Path, cann: str) -> None:
    """NNAL/ATB of ``cann`` and the driver library folder below ``root`` (the node's upper layer)."""
    _write(root / NNAL_VERSION_INFO, nnal_version_info(cann))
    _write(root / DRIVER_LIB, "")


def standin_module(broken: bool = False) -> str:
    """The stand-in's ``__init__.py``: its version from the node's metadata, or the mismatch error."""
    if broken:
        return (
            '"""ascendprep lab: torch_npu built for another torch (fault torch-npu-import)."""\n'
            f"raise ImportError(__file__.rsplit('/', 1)[0] + '/lib/libtorch_npu.so: {UNDEFINED_SYMBOL}')\n"
        )
    return (
        '"""ascendprep lab: a stand-in for torch_npu that imports (login shells only; no NPU code)."""\n'
        "from importlib import metadata as _metadata\n\n"
        "__version__ = _metadata.version('torch_npu')\n"
    )


def standin_profile() -> str:
    return (
        "# ascendprep lab: login shells import the torch_npu stand-in (lab/sim/jobenv.py).\n"
        f'PYTHONPATH="{STANDIN_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"\nexport PYTHONPATH\n'
    )


def install_torch_npu_standin(root: Path) -> None:
    _write(root / STANDIN_INIT.lstrip("/"), standin_module())
    _write(root / STANDIN_PROFILE.lstrip("/"), standin_profile())


def container_wrapper(hiding: bool) -> str:
    if not hiding:
        return (
            "#!/bin/sh\n# ascendprep lab: 'docker exec' of a container that sees everything the host has.\n"
            'exec unshare -m -- "$@"\n'
        )
    mounts = " && ".join(f"mount -t tmpfs -o size=1m lab-container {path}" for path in HIDDEN_BY_CONTAINER)
    return (
        "#!/bin/sh\n# ascendprep lab: 'docker exec' of a container started without the driver and /etc/ascendprep mounts.\n"
        f'exec unshare -m -- sh -c \'{mounts} && exec "$@"\' lab-container "$@"\n'
    )


def short_timeout_profile() -> str:
    return f"# ascendprep lab fault short-connect-timeout: a site profile with a short HCCL timeout.\nexport HCCL_CONNECT_TIMEOUT={SHORT_TIMEOUT_S}\n"


def stray_rank_table_profile() -> str:
    return f"# ascendprep lab fault stray-rank-table: a site profile left pointing at an old rank table.\nexport RANK_TABLE_FILE={STRAY_RANK_TABLE}\n"


def stray_rank_table() -> str:
    """An old 8-NPU table of a server that is not in the cluster (what EI0014 jobs start from)."""
    devices = [{"device_id": str(i), "device_ip": f"192.168.99.{i + 1}", "rank_id": str(i)} for i in range(8)]
    table = {
        "version": "1.0",
        "server_count": "1",
        "server_list": [{"server_id": "10.99.0.1", "device": devices}],
        "status": "completed",
    }
    return json.dumps(table, indent=2) + "\n"


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    os.chmod(temp, mode)
    os.replace(temp, path)
