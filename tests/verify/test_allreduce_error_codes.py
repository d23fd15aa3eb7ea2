"""HCCL's error codes in a node's log name the cause, the fix and the check that catches it.

The log lines are the words of the public threads each KnownError cites. A key "K (what)" is a
second spelling of the fault K.
"""

from __future__ import annotations

import pytest

from ascendprep.verify.allreduce.diagnosis import LaunchResult, launch_problem
from ascendprep.verify.allreduce.error_codes import KNOWN_ERRORS, named_causes
from ascendprep.verify.allreduce.results import CollectedOutput
from ascendprep.verify.allreduce.scripts import LaunchOutput
from ascendprep.verify.checks.registry import BY_ID

LOGS = {
    "EJ0001": "EJ0001: 2024-05-21-11:57:54.167.645 Failed to initialize the HCCP process. Reason: Maybe the last training process is running.",
    "EJ0002": "RuntimeError: EJ0002: [PID: 38079] 2025-07-15-12:45:31.202.787 The network port is down.",
    "EJ0003/EI0019": (
        "[rank0]: EJ0003: [PID: 159] 2025-03-26-17:01:02.816.428 Failed to bind the IP port. Reason: The IP address and port have been bound already.\n"
        "[rank0]:         host nic listen start failed, port[60000], return[11][FUNC:StartListenSocket][FILE:network_manager.cc][LINE:1163]"
    ),
    "EJ0003/EI0019 (EI0019)": "Communication_Error_Bind_IP_Port(EI0019): socket type[2], listen on ip[10.0.0.12] port[60000] fail",
    "EI0006": "[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send the data in time.",
    "EI0006 (socket establish timeout)": "[ERROR] HCCL(106335,):2026-05-21-21:39:58.705.534 [hccl_socket_manager.cc:796] [128655][Wait][LinkEstablish]wait socket establish timeout, role[0] rank[0] timeout[120 s]",
    "EI0014": "EI0014: rank table is invalid",
    "ra rdma init failed": "[ERROR] HCCL(38011,python):2025-07-15-12:45:32.997.780 [network_manager.cc:639] [38011][Init][RDMA]errNo[0x000000000500000b] ra rdma init failed, devid[0] ip[192.168.20.148]",
    "connectFullMesh": "[rank8]:[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
}


@pytest.mark.parametrize("key", list(LOGS))
def test_each_known_error_is_found_in_its_thread_words(key):
    assert [known.key for known in named_causes("noise\n" + LOGS[key] + "\nmore noise")][:1] == [key.split(" (")[0]]


def test_every_entry_points_at_checks_that_exist_and_has_a_fix():
    for known in KNOWN_ERRORS:
        assert known.checks and all(check in BY_ID for check in known.checks), known.key
        assert known.fix and known.cause and known.source


def test_codes_do_not_match_inside_longer_words_and_order_follows_the_log():
    assert named_causes("EJ00011 XEJ0001 EI00060") == []
    both = named_causes(LOGS["EI0006"] + "\n" + LOGS["EJ0001"])
    assert [known.key for known in both] == ["EI0006", "EJ0001"]


def test_a_failed_node_names_the_cause_and_the_check_in_its_problem():
    log = "Traceback (most recent call last):\nRuntimeError: HCCL error\n" + LOGS["EJ0001"] + "\n"
    result = LaunchResult("node2", LaunchOutput(exit_code=1, log=log))
    found = launch_problem(result, 2, CollectedOutput(), "10.0.0.1", 29500, 60)
    assert found is not None and found.node == "node2"
    assert "EJ0001: HCCP could not start on the NPU" in found.message and "npu.busy" in found.message
    assert found.fix.startswith("stop the process that holds the NPU")
    # A log without a known code keeps the problem as it was.
    plain = launch_problem(
        LaunchResult("node2", LaunchOutput(exit_code=1, log="RuntimeError: boom\n")),
        2,
        CollectedOutput(),
        "10.0.0.1",
        29500,
        60,
    )
    assert plain is not None and " -- " not in plain.message
