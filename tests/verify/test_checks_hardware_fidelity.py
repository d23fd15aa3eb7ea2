"""Checks over what real drivers print: LLDP with no neighbour answering, and a link-down count
that the bounded change records no longer explain (issues 10 and 14)."""

from __future__ import annotations

from dataclasses import replace

from verify_cluster_facts import NOW, healthy_facts, judge, with_npu

from ascendprep.base.findings import Severity
from ascendprep.facts.model import LinkRecord, LinkStat, ProbeError
from ascendprep.verify.checks.model import COULD_NOT_CHECK, Status
from ascendprep.verify.checks.runner import no_errors


def _results(desired, node2):
    return judge(desired, {"node2": node2})


def _one(results, check, npu):
    (result,) = [r for r in results if r.check == check and r.node == "node2" and r.npu == npu]
    return result


def test_no_lldp_neighbour_with_link_up_names_the_switch_side_fix(desired):
    result = _one(_results(desired, with_npu(healthy_facts(desired, "node2"), 3, lldp=None)), "network.lldp", 3)
    assert result.status is Status.FAILED
    assert result.message == "no LLDP neighbour: the link is up but the switch port sends no LLDP"
    assert result.fix.startswith("enable LLDP on the switch port (e.g. 'lldp enable'")
    assert result.evidence["link"] == "UP"


def test_no_lldp_neighbour_with_link_down_points_at_the_link(desired):
    result = _one(
        _results(desired, with_npu(healthy_facts(desired, "node2"), 3, lldp=None, link="DOWN")), "network.lldp", 3
    )
    assert result.message == "no LLDP neighbour: the link is down"
    assert "network.link" in result.fix


def test_lldp_tool_that_could_not_run_is_not_called_no_neighbour(desired):
    node2 = replace(
        with_npu(healthy_facts(desired, "node2"), 3, lldp=None),
        errors=(
            ProbeError("hccn.lldp", "timeout", "hccn_tool -i 3 -lldp -g timed out after 10s and was killed", npu=3),
        ),
    )
    result = _one(_results(desired, node2), "network.lldp", 3)
    assert result.message.startswith(COULD_NOT_CHECK) and "timed out" in result.message
    assert "no LLDP neighbour" not in result.message


def test_down_count_without_matching_records_is_reported_as_flaps(desired):
    # 3 downs counted; the bounded history kept only UP records: flaps of unknown time.
    stat = LinkStat(NOW, up_count=4, down_count=3, records=(LinkRecord("Wed Jun  7 09:10:00 2023", "UP"),))
    results = _results(desired, with_npu(healthy_facts(desired, "node2"), 5, link_stat=stat))
    result = _one(results, "network.link_flaps", 5)
    assert result.status is Status.FAILED and result.severity is Severity.WARNING
    assert result.message.startswith("link down count is 3 but only 0 of those downs are in the tool's change records")
    assert result.evidence["unrecorded_downs"] == 3
    assert no_errors(results)


def test_down_count_explained_by_old_records_passes(desired):
    stat = LinkStat(
        NOW,
        up_count=2,
        down_count=1,
        records=(LinkRecord("Mon Jun  5 09:10:00 2023", "UP"), LinkRecord("Mon Jun  5 09:09:58 2023", "DOWN")),
    )
    result = _one(
        _results(desired, with_npu(healthy_facts(desired, "node2"), 5, link_stat=stat)), "network.link_flaps", 5
    )
    assert result.status is Status.PASSED


def test_old_driver_without_down_count_relies_on_records(desired):
    stat = LinkStat(NOW, up_count=1, down_count=None, records=(LinkRecord("Mon Jun  5 09:10:00 2023", "UP"),))
    result = _one(
        _results(desired, with_npu(healthy_facts(desired, "node2"), 5, link_stat=stat)), "network.link_flaps", 5
    )
    assert result.status is Status.PASSED and result.message == "no link down in the last 24 h"
