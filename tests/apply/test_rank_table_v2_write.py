"""Ascend 950: what apply writes for the rank table 2.0 is byte for byte the table the plan
showed (its sha256 is the plan's ``after``), and the file on the node passes HCCL's 2.0 rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from nodescript import run_node_script

from ascendprep.apply.script import parse_apply_output, render_apply_script
from ascendprep.base.paths import MANAGED_FILES, RANK_TABLE
from ascendprep.desired.state import build_desired, plan_rank_table_v2
from ascendprep.facts.model import HostFacts, ManagedFile, NpuFacts, NpuSmiChip
from ascendprep.facts.ub_dev_info import parse_dev_info
from ascendprep.facts.ub_model import UbFacts
from ascendprep.inventory.load import inventory_from_text
from ascendprep.inventory.ranktable2_rules import check_rank_table_v2
from ascendprep.plan.changes import WriteFile
from ascendprep.plan.diff import diff_host
from ascendprep.plan.drift import sha256_text

#: The vendor's -dev_info example (hicann/driver docs/en/Ascend_950_HCCN_Tool).
DEV_INFO = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "hccn" / "a5_dev_info.out"


def _host() -> HostFacts:
    dev_info = parse_dev_info(DEV_INFO.read_text())
    return HostFacts(
        npus={n: NpuFacts(devid=n, ub=UbFacts(dev_info=dev_info)) for n in range(2)},
        npu_chips=tuple(NpuSmiChip(n, 0, "950PR", slot_id=n, chip_phy_id=n) for n in range(2)),
        managed_files={path: ManagedFile(path, False) for path in MANAGED_FILES},
    )


def test_the_written_table_is_the_planned_one_and_passes_the_2_0_rules(tmp_path: Path):
    data = {
        "name": "t",
        "product": "atlas-350",
        "npus_per_node": 2,
        "device_network": {"subnet": "10.20.0.0/24"},
        "nodes": [{"name": "n[1-2]", "host": "10.0.0.[11-12]"}],
    }
    desired = build_desired(inventory_from_text(yaml.safe_dump(data)))
    assert [f.id for f in plan_rank_table_v2(desired, {"n1": _host(), "n2": _host()})] == ["ranktable.v2_planned"]
    [planned] = [c for c in diff_host(desired, "n1", _host(), areas=("files",)).changes if c.target == RANK_TABLE]
    assert isinstance(planned, WriteFile) and planned.content is not None
    # the same step, pointed at a scratch file instead of /etc/ascendprep
    target = tmp_path / "rank_table.json"
    step = WriteFile("n1", None, str(target), planned.sha256, planned.content, planned.mode)
    script = render_apply_script([step], None, lock_dir=str(tmp_path / "lock"))
    done = run_node_script(
        [shutil.which("sh") or "/bin/sh", "-s"], input=script, capture_output=True, text=True, timeout=60
    )
    assert parse_apply_output(done.stdout)[f"file:{target}"].ok, done.stdout + done.stderr
    written = target.read_text()
    assert sha256_text(written) == planned.after
    table = json.loads(written)
    assert check_rank_table_v2(table, len(written.encode())) == []
    assert table["version"] == "2.0" and table["rank_count"] == 4
