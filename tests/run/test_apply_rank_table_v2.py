"""Apply on an Ascend 950 inventory rebuilds the rank table 2.0 from every node's fresh EIDs
before writing it, and refuses (nothing changed) when it cannot: a node unreadable now, or
``--local``, which reads only this machine."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ascendprep.base.paths import RANK_TABLE
from ascendprep.desired.state import build_desired
from ascendprep.facts.model import HostFacts, NpuFacts, NpuSmiChip
from ascendprep.facts.ub_dev_info import parse_dev_info
from ascendprep.facts.ub_model import UbFacts
from ascendprep.inventory.load import inventory_from_text
from ascendprep.run.apply import Refused, rebuild_rank_table_v2
from ascendprep.run.fanout import HostOutcome
from ascendprep.run.hosts import Gathered

#: The vendor's -dev_info example (hicann/driver docs/en/Ascend_950_HCCN_Tool).
DEV_INFO = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "hccn" / "a5_dev_info.out"


def _desired():
    data = {
        "name": "t",
        "product": "atlas-350",
        "npus_per_node": 2,
        "device_network": {"subnet": "10.20.0.0/24"},
        "nodes": [{"name": "n[1-2]", "host": "10.0.0.[11-12]"}],
    }
    return build_desired(inventory_from_text(yaml.safe_dump(data)))


def _read(name: str) -> HostOutcome[Gathered]:
    dev_info = parse_dev_info(DEV_INFO.read_text())
    facts = HostFacts(
        npus={n: NpuFacts(devid=n, ub=UbFacts(dev_info=dev_info)) for n in range(2)},
        npu_chips=tuple(NpuSmiChip(n, 0, "950PR", slot_id=n, chip_phy_id=n) for n in range(2)),
    )
    return HostOutcome(name, Gathered(facts, "", "", 0.0))


def test_the_table_is_rebuilt_from_every_node_for_the_fresh_diff():
    desired = _desired()
    rebuild_rank_table_v2(desired, {"n1": _read("n1"), "n2": _read("n2")}, local=False)
    contents = {f.content for node in desired.nodes.values() for f in node.files if f.path == RANK_TABLE}
    assert len(contents) == 1 and '"version": "2.0"' in next(iter(contents))


def test_a_node_unreadable_now_refuses_the_apply_and_is_named():
    desired = _desired()
    gone = HostOutcome("n2", error="connection refused", kind="unreachable")
    with pytest.raises(Refused) as refused:
        rebuild_rank_table_v2(desired, {"n1": _read("n1"), "n2": gone}, local=False)
    assert any(line.startswith("n2: ") and "n2: not read" in line for line in refused.value.lines)
    assert not any(f.path == RANK_TABLE for node in desired.nodes.values() for f in node.files)


def test_local_cannot_confirm_the_table_and_refuses():
    with pytest.raises(Refused, match="--local"):
        rebuild_rank_table_v2(_desired(), {"n1": _read("n1")}, local=True)
