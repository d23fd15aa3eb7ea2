"""The evidence bundle keeps a node's HCCS pings (hccs.out) so that a saved A3 run is judged the
same when read back, and a node whose HCCS phase failed keeps why."""

from __future__ import annotations

from datetime import date

import yaml

from ascendprep.facts.hccs import parse_hccs_output
from ascendprep.run.bundle import Bundle, new_bundle_dir, read_bundle, write_bundle
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.registry import Selection

NONCE = "0123456789abcdef"
INVENTORY = yaml.safe_dump(
    {
        "name": "a3",
        "product": "atlas-a3",
        "npus_per_node": 2,
        "device_network": {"subnets": ["10.20.0.0/24", "10.21.0.0/24"]},
        "nodes": [{"name": "n1", "host": "10.0.0.11"}, {"name": "n2", "host": "10.0.0.12"}],
    }
)


def _hccs_transcript() -> str:
    ok = (
        "device 0 PING 192.1.2.199\nThis pkt ping success!\nrecv seq 0, time = 9.500us, L1 plane check result = 0x0\n"
        "1 packets transmitted, 1 received, 0.00% packets loss\nmax time = 9.500us\naverage time = 9.500us\n"
    )
    lost = "device 1 PING 192.1.3.198\nThis pkt check recv msg fail!\n1 packets transmitted, 0 received, 100.00% packets loss\n"
    parts = [f"@@ascendprep hccs v1 {NONCE}\n"]
    for die, target, out, rc in ((0, "192.1.2.199", ok, 0), (1, "192.1.3.198", lost, 1)):
        parts += [
            f"@@{NONCE} begin hccs npu={die} target={target}\n",
            out,
            f"@@{NONCE} stderr\n",
            f"@@{NONCE} end rc={rc} tries=1\n",
        ]
    return "".join(parts) + f"@@{NONCE} done\n"


def test_hccs_results_survive_the_bundle(tmp_path):
    text = _hccs_transcript()
    hosts = {
        "n1": HostEvidence(
            "n1",
            "10.0.0.11",
            None,
            error="unreachable",
            error_kind="connect",
            hccs_pings=tuple(parse_hccs_output(text)),
            hccs_stdout=text,
        ),
        "n2": HostEvidence(
            "n2", "10.0.0.12", None, error="unreachable", error_kind="connect", hccs_error="the HCCS ping script failed"
        ),
    }
    target = new_bundle_dir(tmp_path / "runs")
    write_bundle(
        Bundle("/x/inventory.yaml", INVENTORY, hosts, None, "ring", Selection().to_dict(), date(2026, 1, 1)),
        target,
        {"kind": "verify"},
    )
    again = read_bundle(target).hosts
    assert again["n1"].hccs_pings == hosts["n1"].hccs_pings
    assert [(r.npu, r.ok, r.average_us) for r in again["n1"].hccs_pings] == [(0, True, 9.5), (1, False, None)]
    assert (again["n2"].hccs_pings, again["n2"].hccs_error) == (None, "the HCCS ping script failed")
