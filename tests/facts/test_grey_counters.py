"""network.counters: a counter growing past its threshold is named with its rate and threshold;
counts since boot, slow growth, resets and the short driver form are not failures."""

from __future__ import annotations

from dataclasses import replace

from verify_cluster_facts import INVENTORY, desired_state, healthy_facts, judge, with_npu

from ascendprep.base.findings import Severity
from ascendprep.facts.model import CounterSample, ProbeError
from ascendprep.verify.checks.model import COULD_NOT_CHECK, Status


def _samples(first: dict, second: dict, seconds: float = 5.0):
    return (CounterSample(1, 2000.0, first), CounterSample(2, 2000.0 + seconds, second))


def _counters(desired, samples, npu=3):
    facts = with_npu(healthy_facts(desired, "node2"), npu, stat_samples=samples)
    results = judge(desired, {"node2": facts})
    return [r for r in results if r.check == "network.counters" and r.node == "node2" and r.npu == npu]


def test_fcs_errors_growing_50_a_second_are_named_with_rate_and_threshold(desired):
    (result,) = _counters(desired, _samples({"mac_rx_fcs_err_pkt_num": 100}, {"mac_rx_fcs_err_pkt_num": 350}))
    assert result.status is Status.FAILED and result.severity is Severity.ERROR
    assert result.subject == "mac_rx_fcs_err_pkt_num"
    assert result.message == "mac_rx_fcs_err_pkt_num grows 50.0/s over 5.0s (threshold 1/s, fcs_errors_per_s)"
    assert result.evidence["metric"] == "npu_chip_info_rx_fcs_num"
    assert result.evidence["rate_per_s"] == 50.0
    assert result.evidence["threshold"] == {
        "name": "fcs_errors_per_s",
        "value": 1.0,
        "unit": "per second",
        "source": "default",
    }
    assert "optical module" in result.fix and "-i 3 -optical -g" in result.fix


def test_a_pfc_pause_storm_is_named(desired):
    first = {"mac_rx_pfc_pkt_num": 5, "mac_tx_pfc_pkt_num": 0, "mac_rx_fcs_err_pkt_num": 0}
    second = {"mac_rx_pfc_pkt_num": 5 + 100_000, "mac_tx_pfc_pkt_num": 0, "mac_rx_fcs_err_pkt_num": 0}
    (result,) = _counters(desired, _samples(first, second))
    assert (result.status, result.subject, result.evidence["rate_per_s"]) == (
        Status.FAILED,
        "mac_rx_pfc_pkt_num",
        20000.0,
    )
    assert "pause storm" in result.fix


def test_two_counters_over_their_thresholds_are_two_findings(desired):
    first = {"mac_rx_pfc_pkt_num": 0, "roce_qp_status_err_num": 0}
    second = {"mac_rx_pfc_pkt_num": 50_000, "roce_qp_status_err_num": 10}
    assert sorted(r.subject for r in _counters(desired, _samples(first, second))) == [
        "mac_rx_pfc_pkt_num",
        "roce_qp_status_err_num",
    ]


def test_counts_since_boot_and_slow_growth_pass_and_are_shown(desired):
    (result,) = _counters(
        desired,
        _samples(
            {"mac_rx_fcs_err_pkt_num": 9000, "mac_rx_pfc_pkt_num": 10},
            {"mac_rx_fcs_err_pkt_num": 9002, "mac_rx_pfc_pkt_num": 4000},
        ),
    )
    assert result.status is Status.PASSED
    assert result.evidence["since_boot"] == {"npu_chip_info_rx_fcs_num": 9000, "npu_chip_mac_rx_pfc_pkt_num": 10}
    assert result.evidence["rates_per_s"] == {"npu_chip_info_rx_fcs_num": 0.4, "npu_chip_mac_rx_pfc_pkt_num": 798.0}
    assert result.evidence["thresholds"]["pfc_frames_per_s"]["value"] == 1000.0


def test_an_inventory_threshold_turns_slow_growth_into_a_finding(desired):
    strict = desired_state(INVENTORY + "thresholds:\n  fcs_errors_per_s: 0.1\n")
    (result,) = _counters(strict, _samples({"mac_rx_fcs_err_pkt_num": 0}, {"mac_rx_fcs_err_pkt_num": 2}))
    assert result.status is Status.FAILED
    assert result.evidence["threshold"] == {
        "name": "fcs_errors_per_s",
        "value": 0.1,
        "unit": "per second",
        "source": "inventory",
    }


def test_a_counter_cleared_between_the_reads_is_unknown_not_negative(desired):
    (result,) = _counters(
        desired,
        _samples(
            {"mac_rx_fcs_err_pkt_num": 500, "mac_rx_pfc_pkt_num": 7},
            {"mac_rx_fcs_err_pkt_num": 3, "mac_rx_pfc_pkt_num": 7},
        ),
    )
    assert result.status is Status.PASSED
    assert "npu_chip_info_rx_fcs_num" not in result.evidence["rates_per_s"]
    assert "went down from 500 to 3" in result.evidence["unknown"]["npu_chip_info_rx_fcs_num"]
    assert "rate unknown for npu_chip_info_rx_fcs_num" in result.message


def test_the_short_form_judges_the_roce_error_counters_only(desired):
    (result,) = _counters(
        desired,
        _samples(
            {"roce_rx_err_pkt_num": 0, "roce_tx_err_pkt_num": 0}, {"roce_rx_err_pkt_num": 100, "roce_tx_err_pkt_num": 0}
        ),
    )
    assert (result.status, result.subject, result.evidence["rate_per_s"]) == (
        Status.FAILED,
        "roce_rx_err_pkt_num",
        20.0,
    )
    (steady,) = _counters(
        desired,
        _samples(
            {"roce_rx_err_pkt_num": 4, "roce_tx_err_pkt_num": 0}, {"roce_rx_err_pkt_num": 4, "roce_tx_err_pkt_num": 0}
        ),
    )
    assert steady.status is Status.PASSED and steady.evidence["form"].startswith("short")


def test_one_read_only_is_skipped_with_the_counts_since_boot(desired):
    (result,) = _counters(desired, (CounterSample(1, 2000.0, {"mac_rx_fcs_err_pkt_num": 12}),))
    assert result.status is Status.SKIPPED and "--sample-interval 0" in result.message
    assert result.evidence["since_boot"] == {"npu_chip_info_rx_fcs_num": 12}


def test_a_failed_read_is_could_not_check(desired):
    facts = with_npu(healthy_facts(desired, "node2"), 3, stat_samples=())
    facts = replace(
        facts,
        errors=(ProbeError("hccn.stat", "timeout", "hccn_tool -i 3 -stat -g timed out after 10s and was killed", 3),),
    )
    (result,) = [
        r
        for r in judge(desired, {"node2": facts})
        if r.check == "network.counters" and r.node == "node2" and r.npu == 3
    ]
    assert result.status is Status.FAILED and result.message.startswith(COULD_NOT_CHECK)


# -- npu.health with decoded event codes (same facts helper) ----------------------------------


def _health(desired, health, code, npu=4):
    from ascendprep.facts.model import NpuHealth

    facts = replace(
        healthy_facts(desired, "node2"),
        npu_health=tuple(
            NpuHealth(
                i, 0, health if i == npu else "OK", code if i == npu else None, "node type=SOC" if i == npu else None
            )
            for i in range(8)
        ),
    )
    (result,) = [
        r for r in judge(desired, {"node2": facts}) if r.check == "npu.health" and r.node == "node2" and r.npu == npu
    ]
    return result


def test_a_sub_health_code_is_a_warning_with_the_vendor_action(desired):
    result = _health(desired, "Warning", "81078605")
    assert (result.status, result.severity) == (Status.FAILED, Severity.WARNING)
    assert (
        result.message
        == "npu-smi health is Warning: 81078605 SubHealth (Some lanes of a RoCE port are faulty) (node type=SOC)"
    )
    assert result.fix.startswith("sub-healthy")
    assert result.evidence["codes"] == [
        {
            "code": "81078605",
            "level": "SubHealth",
            "action": result.fix,
            "cause": "Some lanes of a RoCE port are faulty",
        }
    ]


def test_an_unknown_code_is_an_error_and_is_named(desired):
    result = _health(desired, "Alarm", "80E18402 8FFF0001")
    assert (result.status, result.severity) == (Status.FAILED, Severity.ERROR)
    assert "8FFF0001 unknown" in result.message
    assert [c["level"] for c in result.evidence["codes"]] == ["SeparateNPU", "unknown"]
    assert result.fix.startswith("unknown:")


def test_reads_of_an_unknown_pass_are_skipped_not_a_crash(desired):
    (result,) = _counters(desired, (CounterSample(3, 2000.0, {"mac_rx_fcs_err_pkt_num": 12}),))
    assert result.status is Status.SKIPPED and "no pass" in result.message
