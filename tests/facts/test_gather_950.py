"""The Ascend 950 plan gather script run under sh against fake 950 tools: the slots come from
``npu-smi info -m``, the reads go to ``bond<slot>`` in the mode-first syntax, npu-smi gets no
``-c``; what it prints parses back into facts plan diffs by slot."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from nodescript import run_node_script

from ascendprep.desired.state import build_desired
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.diff import diff_host
from ascendprep.plan.reads import units_for_plan

SHELLS = [shell for shell in ("dash", "bash") if shutil.which(shell)]

# npu-smi info -l / -m as the 950 guide prints them (hicann/driver docs/en/Ascend_950_npu-smi:
# querying-all-npu-devices.md, querying-the-device-mapping-information.md), two cards in slots 3, 7.
NPU_SMI = r"""#!/bin/sh
echo "$*" >>"$FAKE_LOG"
case "$*" in
"info -l") printf 'Total Count                    : 2\n\nNPU ID                         : 0\nProduct Name                   : A5 PCIe Card\nSerial Number                  : IT23HMDA0502FAA\n\nNPU ID                         : 1\nProduct Name                   : A5 PCIe Card\nSerial Number                  : IT23HMDA0502FAB\n' ;;
"info -m") printf 'NPU ID          Slot ID          Chip ID          Chip Phy-ID          Chip Name\n0               3                0                0                    950PR\n1               7                0                1                    950PR\n' ;;
*) echo "npu-smi: invalid arguments: $*" >&2; exit 1 ;;
esac
"""

#: The vendor's -dev_info example (hicann/driver docs/en/Ascend_950_HCCN_Tool, querying the NPU
#: device information), which the fake prints for every device.
DEV_INFO = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "hccn" / "a5_dev_info.out"

# hccn_tool: only the 950's mode-first forms, and only on the NPU's own bond device (the driver's
# CHECK_BOND_DEV_RETURN message otherwise).
HCCN_TOOL = r"""#!/bin/sh
echo "$*" >>"$FAKE_LOG"
slot_of() { case $1 in 0) echo 3 ;; 1) echo 7 ;; esac; }
case "$1 $2 $3" in
"-g -ip -i"|"-g -gateway -i")
	if [ "$5" != -d ] || [ "$6" != "bond$(slot_of "$4")" ]; then
		echo "Bond device ID mismatch: name='$6', expected 'bond$(slot_of "$4")'." >&2; exit 1
	fi
	case $2 in
	-ip) printf 'ipaddr:10.20.0.1%s\nnetmask:255.255.255.0\n' "$4" ;;
	-gateway) echo 'default gateway:10.20.0.1' ;;
	esac ;;
"-g -netdetect -i") echo 'netdetect addr: 10.20.0.1' ;;
"-g -dev_info -i") [ "$#" -eq 4 ] || { echo 'Get invalid major cmd type.' >&2; exit 1; }; cat "$FAKE_DEV_INFO" ;;
"-g -tls -i")
	# the first line of the 950 guide's example (querying-the-tls-certificate-information-of-an-npu-device.md)
	[ "$#" -eq 4 ] || { echo 'Get invalid major cmd type.' >&2; exit 1; }
	echo "dev_id:$4, tls switch[$4](0:disable, 1:enable), tls preconfigured[0](0:non-preset, 1:preset), tls alarm time threshold[60]days" ;;
*) echo 'Get invalid major cmd type.' >&2; exit 1 ;;
esac
"""


def _tool(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_950_plan_script_reads_bond_slots_from_npu_smi_map(tmp_path, shell):
    data = {
        "name": "t",
        "product": "atlas-350",
        "npus_per_node": 2,
        "device_network": {"subnet": "10.20.0.0/24", "gateway": "10.20.0.1"},
        "nodes": [{"name": "n1", "host": "10.0.0.11"}],
    }
    desired = build_desired(inventory_from_text(yaml.safe_dump(data)))
    home = tmp_path / "Ascend"
    _tool(tmp_path / "bin" / "npu-smi", NPU_SMI)
    _tool(home / "driver" / "tools" / "hccn_tool", HCCN_TOOL)
    log = tmp_path / "calls.log"
    env = {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "FAKE_LOG": str(log),
        "FAKE_DEV_INFO": str(DEV_INFO),
        "TMPDIR": str(tmp_path),
    }
    script = render_gather_script(
        2,
        "python3",
        per_command_timeout=10,
        ascend_home=str(home),
        units=units_for_plan(desired, "n1"),
        phase="plan",
        generation="950",
    )
    result = run_node_script([shell, "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    facts = parse_gather_output(result.stdout)

    assert [e.message for e in facts.errors if e.probe.startswith(("hccn.", "npu_smi"))] == []
    assert [(c.npu_id, c.slot_id) for c in facts.npu_chips] == [(0, 3), (1, 7)]
    assert (facts.npus[0].ip, facts.npus[1].ip) == ("10.20.0.10", "10.20.0.11")
    assert facts.npus[1].gateway == "10.20.0.1" and facts.npus[0].netdetect == "10.20.0.1"
    calls = log.read_text().splitlines()
    assert "-g -ip -i 1 -d bond7" in calls and "-g -gateway -i 0 -d bond3" in calls
    assert not any("-tls" in call for call in calls)  # the inventory plans no TLS switch
    # each NPU's UB ports and EIDs, for the rank table 2.0 (and none of verify's other UB reads)
    assert "-g -dev_info -i 0" in calls and "-g -dev_info -i 1" in calls
    assert not any("-ub_connect" in call or " -u " in f" {call} " for call in calls)
    assert [p.port for p in facts.npus[1].ub.dev_info.ports if p.port_type.upper() == "UB"] == [4, 5, 6]
    assert not any(" -c " in f" {call} " for call in calls)  # npu-smi is never given -c on a 950

    plan = diff_host(desired, "n1", facts, areas=("npu",))
    assert plan.incomplete == [] and plan.findings == []
    assert {c.target for c in plan.changes} <= {"npu 0 bond3", "npu 1 bond7"}


@pytest.mark.parametrize("shell", SHELLS)
def test_the_950_verify_script_reads_tls_per_device_mode_first(tmp_path, shell):
    """-tls is a device command on 950 (``hccn_tool -g -tls -i N``, no bond device); its answer is
    the 910 form, read by the same parser (the 950 guide's example)."""
    home = tmp_path / "Ascend"
    _tool(tmp_path / "bin" / "npu-smi", NPU_SMI)
    _tool(home / "driver" / "tools" / "hccn_tool", HCCN_TOOL)
    log = tmp_path / "calls.log"
    env = {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "FAKE_LOG": str(log),
        "TMPDIR": str(tmp_path),
    }
    script = render_gather_script(2, "python3", per_command_timeout=10, ascend_home=str(home), generation="950")
    result = run_node_script([shell, "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    facts = parse_gather_output(result.stdout)
    assert [e.message for e in facts.errors if e.probe == "hccn.tls"] == []
    assert (facts.npus[0].tls.switch, facts.npus[1].tls.switch) == (0, 1)
    calls = log.read_text().splitlines()
    assert "-g -tls -i 0" in calls and "-g -tls -i 1" in calls
    assert not any(call.startswith("-i ") for call in calls)  # no 910 form was tried
