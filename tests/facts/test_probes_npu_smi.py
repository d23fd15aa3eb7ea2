"""npu-smi: the NPU list and per-chip health, in the spellings of 910/910B, A3 and the 950 docs."""

from __future__ import annotations

from ascendprep.facts import npu_smi
from ascendprep.facts.gather import parse_gather_output


def test_gather_records_health_per_chip_and_failures(fixture_text, transcript):
    text = transcript(
        "gather",
        [
            {"name": "npu_smi.list", "stdout": fixture_text("npu_smi/list_reference_excerpt.out")},
            {
                "name": "npu_smi.health",
                "attrs": {"npu": 0, "chip": 0},
                "stdout": fixture_text("npu_smi/health_910b.out"),
            },
            {"name": "npu_smi.health", "attrs": {"npu": 1, "chip": 0}, "rc": 124},
        ],
    )
    facts = parse_gather_output(text)
    assert facts.npu_smi.total_count == 8
    assert [(h.npu_id, h.chip, h.health, h.ok) for h in facts.npu_health] == [(0, 0, "OK", True)]
    (error,) = facts.errors
    assert (error.probe, error.npu, error.kind) == ("npu_smi.health", 1, "timeout")
    assert "npu-smi info -i 1 -c 0 -t health" in error.message


def test_health_keeps_every_code_and_the_continued_error_information():
    text = (
        "        Health Status                  : Alarm\n"
        "        Error Code                     : A4025021 8C03A000 8C084E00\n"
        "        Error Information              : node type=DEVICE, sensor type=Heartbeat, event state=adda heartbeat lost\n"
        "                                       : node type=SoC, sensor type=General, event state=HBM ECC\n"
        "                                       : node type=DEVICE, sensor type=Heartbeat, event state=lost\n"
    )
    assert npu_smi.parse_health(text) == (
        "Alarm",
        "A4025021 8C03A000 8C084E00",
        "node type=DEVICE, sensor type=Heartbeat, event state=adda heartbeat lost; "
        "node type=SoC, sensor type=General, event state=HBM ECC; "
        "node type=DEVICE, sensor type=Heartbeat, event state=lost",
    )


def test_dcmi_line_search_is_linear_on_hostile_output():
    import time

    from ascendprep.facts.failures import dcmi_failure

    hostile = "dcmi x initialize fail" * 50_000  # one 1.1 MB line, no "ret is"
    started = time.monotonic()
    assert dcmi_failure(hostile) is None
    assert time.monotonic() - started < 1.0
    assert dcmi_failure("noise\ndcmi module initialize failed. ret is -8005\n") == (
        "dcmi module initialize failed. ret is -8005 (the driver's management interface did not start: "
        "driver not loaded or not matching the kernel, or no access to /dev/davinci*)"
    )
