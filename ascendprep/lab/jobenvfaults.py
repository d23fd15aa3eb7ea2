"""Node faults of the job environment (those of what blocks a job are in lab/blockerfaults.py); lab/faults.py registers them.

Each writes files inside the node (``node_op``) and records them, so that ``heal`` removes or
restores exactly those:

* ``stray-rank-table``: an old rank table in ``/etc/ascendprep`` and a site profile exporting
  ``RANK_TABLE_FILE`` to it (``job.rank_table``);
* ``short-connect-timeout``: a site profile exporting ``HCCL_CONNECT_TIMEOUT=60`` (``job.connect_timeout``);
* ``torch-npu-import``: torch_npu's import fails with an undefined symbol (``job.torch_npu_import``);
* ``container-hides``: the wrappers ``lab-container`` (sees everything) and
  ``lab-container-hiding`` (no driver, no env files) for ``verify --exec-via`` (``job.container``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ascendprep.lab.sim import jobenv as sim

if TYPE_CHECKING:
    from ascendprep.lab.running import RunningLab

JOBENV_FAULTS = ("stray-rank-table", "short-connect-timeout", "torch-npu-import", "container-hides")


def _files(kind: str) -> list[tuple[str, str, int]]:
    """(path, text, mode) a fault writes."""
    if kind == "stray-rank-table":
        return [
            (sim.STRAY_RANK_TABLE, sim.stray_rank_table(), 0o644),
            (sim.STRAY_RANK_TABLE_PROFILE, sim.stray_rank_table_profile(), 0o644),
        ]
    if kind == "short-connect-timeout":
        return [(sim.SHORT_TIMEOUT_PROFILE, sim.short_timeout_profile(), 0o644)]
    if kind == "torch-npu-import":
        return [(sim.STANDIN_INIT, sim.standin_module(broken=True), 0o644)]
    if kind == "container-hides":
        return [
            (sim.CONTAINER, sim.container_wrapper(hiding=False), 0o755),
            (sim.CONTAINER_HIDING, sim.container_wrapper(hiding=True), 0o755),
        ]
    raise ValueError(kind)


def inject(lab: "RunningLab", record: dict[str, Any], *, rate: Optional[str], version: Optional[str]) -> None:
    saved = []
    for path, text, mode in _files(record["kind"]):
        before = lab.node_op(record["node"], {"op": "read", "path": path})
        lab.node_op(record["node"], {"op": "write", "path": path, "text": text, "mode": mode})
        saved.append({"path": path, "before": before["text"], "written": text})
    record["saved"] = saved


def heal(lab: "RunningLab", record: dict[str, Any]) -> None:
    """Put each file back as it was, unless something rewrote it since (then it is not ours)."""
    for entry in reversed(record["saved"]):
        now = lab.node_op(record["node"], {"op": "read", "path": entry["path"]})
        if now["text"] != entry["written"]:
            continue
        if entry["before"] is None:
            lab.node_op(record["node"], {"op": "remove", "path": entry["path"]})
        else:
            lab.node_op(record["node"], {"op": "write", "path": entry["path"], "text": entry["before"]})
