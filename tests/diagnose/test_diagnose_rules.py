"""The root-rank rules, each on a job written in CANN's formats (joblogs.py), and the faults'
root causes from the knowledge base's edges."""

from __future__ import annotations

from joblogs import (
    GROUP,
    cluster_exception_line,
    console_lines,
    cqe_line,
    ranks,
    t,
    timeout_lines,
    write_job,
)

from ascendprep.diagnose.analyse import diagnose
from ascendprep.run.diagnose import read_trees, scan_tree
from ascendprep.verify.knowledge import knowledge

JOB = ranks(4, 8)


def run(root, tls=None, ips=None):
    tree = read_trees([root])
    events, _ = scan_tree(tree)
    jobs = diagnose(events, [log for _p, log in tree.files], knowledge(), ips or {}, tls or {})
    return jobs


def everyone_times_out(skip=(), **kwargs):
    return {r.rank: timeout_lines(r, 32, t(40, 30 + r.rank % 20), **kwargs) for r in JOB if r.rank not in skip}


def roots(job):
    return [(c.node, c.rank, c.device) for c in job.verdict.culprits]


def test_issue_scenario_32_ranks_all_ei0002_one_plog_shows_cqe_first(tmp_path):
    plog = everyone_times_out()
    plog[13] = [cqe_line(JOB[13], JOB[21], t(40, 12))] + plog[13]
    write_job(tmp_path, JOB, plog, {r.rank: console_lines(r, t(40, 31)) for r in JOB})
    (job,) = run(tmp_path)
    assert job.verdict.rule == "cqe-links"
    assert roots(job) == [("node1", 13, 5)]
    assert job.verdict.culprits[0].device_ip == JOB[13].device_ip
    assert job.fault.key == "hccl.cqe_error" and "network.link_flaps" in job.fault.checks
    causes = {c.key: c for c in job.causes}
    assert causes["hccl.notify_wait_timeout"].root is False
    assert "hccl.cqe_error" in causes["hccl.notify_wait_timeout"].explained_by


def test_cqe_links_converging_on_one_npu_name_it_even_when_it_reports_nothing(tmp_path):
    plog = everyone_times_out()
    for reporter in (2, 9, 30):
        plog[reporter] = [cqe_line(JOB[reporter], JOB[20], t(40, 12))] + plog[reporter]
    write_job(tmp_path, JOB, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "cqe-links" and roots(job) == [("node2", 20, 4)]


def test_cqe_links_that_do_not_converge_give_suspects_not_a_verdict(tmp_path):
    plog = everyone_times_out(skip=(5,))  # rank 5 is silent, so another rule must decide
    plog[1] = [cqe_line(JOB[1], JOB[2], t(40, 1))] + plog[1]
    plog[3] = [cqe_line(JOB[3], JOB[4], t(40, 1))] + plog[3]
    plog[5] = []
    write_job(tmp_path, JOB, plog)
    (job,) = run(tmp_path)
    cqe = next(v for v in job.verdicts if v.rule == "cqe-links")
    assert not cqe.decided and {s.rank for s in cqe.suspects} == {1, 2, 3, 4}
    assert job.verdict.rule == "silent-ranks" and roots(job) == [("node0", 5, 5)]


def test_cluster_exception_location_names_the_rank_hccl_located(tmp_path):
    plog = everyone_times_out()
    for r in JOB:
        plog[r.rank].append(cluster_exception_line(r, JOB[26], t(41, 0)))
    write_job(tmp_path, JOB, plog)
    # HCCL names the server IP and device: resolved through the inventory's map.
    (job,) = run(tmp_path, ips={JOB[26].server: ("node3", 2)})
    assert job.verdict.rule == "cluster-exception"
    assert job.verdict.culprits[0].node == "node3" and "Heartbeat Lost" in job.verdict.reason


def test_silent_rank_of_the_failing_communicator_is_the_root(tmp_path):
    write_job(tmp_path, JOB, {**everyone_times_out(skip=(17,)), 17: []})
    (job,) = run(tmp_path)
    assert job.verdict.rule == "silent-ranks" and roots(job) == [("node2", 17, 1)]
    assert "rank 17 logged nothing" in job.verdict.reason


def test_a_rank_with_no_log_at_all_is_named_as_died(tmp_path):
    plog = everyone_times_out(skip=(30,))
    write_job(tmp_path, JOB, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "silent-ranks"
    assert [(c.rank, c.node) for c in job.verdict.culprits] == [(30, None)]
    assert "left no log" in job.verdict.reason


def test_the_last_reporter_is_named_when_reports_spread_wider_than_the_timeout(tmp_path):
    plog = {r.rank: timeout_lines(r, 32, t(40, 1)) for r in JOB}
    plog[7] = ["[INFO] HCCL(1,python):2025-10-24-11:00:00.000.000 [adapter.cc:1] HCCL_EXEC_TIMEOUT is set to 300"]
    plog[7] += timeout_lines(JOB[7], 32, t(50, 2))
    write_job(tmp_path, JOB, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "last-reporter" and roots(job) == [("node0", 7, 7)]


def test_reports_within_the_timeout_name_no_late_rank(tmp_path):
    plog = {r.rank: timeout_lines(r, 32, t(40, r.rank)) for r in JOB}
    write_job(tmp_path, JOB, plog)
    (job,) = run(tmp_path)
    assert job.verdict is None
    assert len(job.suspects) == 32  # every erroring rank is a suspect; nothing is dressed as a verdict


def test_the_rank_behind_in_op_index_is_the_root(tmp_path):
    plog = everyone_times_out()
    plog[11] = timeout_lines(JOB[11], 32, t(40, 31), index=20)
    write_job(tmp_path, JOB, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "notify-index" and roots(job) == [("node1", 11, 3)]


def test_the_rank_that_ran_another_operator_is_the_root(tmp_path):
    plog = everyone_times_out()
    plog[4] = timeout_lines(JOB[4], 32, t(40, 31), tag="AllGather_" + GROUP)
    write_job(tmp_path, JOB, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "notify-tag" and roots(job) == [("node0", 4, 4)]


def test_tls_switch_different_on_one_npu_is_the_root(tmp_path):
    write_job(tmp_path, JOB, everyone_times_out())
    tls = {(r.node, r.device): 1 for r in JOB}
    tls[("node3", 6)] = 0
    (job,) = run(tmp_path, tls=tls)
    assert job.verdict.rule == "tls-minority" and roots(job) == [("node3", 30, 6)]


def test_transport_chain_end_and_mutual_wait(tmp_path):
    def ei0009(local, peer):
        return (
            f"[rank{local}]: EI0009: [PID: {JOB[local].pid}] 2025-09-24-20:59:48.119.066 Transport init error. Reason: "
            f"[Create][DestLink]Create Dest error! createLink para:rank[{local}]-localUserrank[{local}]-localIpAddr["
            f"{JOB[local].device_ip}], dst_rank[{peer}]-remoteUserrank[{peer}]-remote_ip_addr[{JOB[peer].device_ip}]"
        )

    write_job(tmp_path / "a", JOB, {r.rank: [] for r in JOB}, {1: [ei0009(1, 2)], 2: [ei0009(2, 3)]})
    (job,) = run(tmp_path / "a")
    assert job.verdict.rule == "transport-chain" and roots(job) == [("node0", 3, 3)]
    write_job(tmp_path / "b", JOB, {r.rank: [] for r in JOB}, {1: [ei0009(1, 2)], 2: [ei0009(2, 1)]})
    (job,) = run(tmp_path / "b")
    assert job.verdict.rule == "transport-chain" and "mutual wait" in job.verdict.reason
    assert sorted(c.rank for c in job.verdict.culprits) == [1, 2]


def test_oom_kill_in_the_kernel_log_explains_the_timeouts_and_names_the_killed_rank(tmp_path):
    victim = JOB[22]
    plog = everyone_times_out(skip=(22,))
    plog[22] = []
    oom = f"[ 8412.112233] Out of memory: Killed process {victim.pid} (python) total-vm:9876kB, anon-rss:1234kB\n"
    write_job(tmp_path, JOB, plog, extra={"node2/messages": oom})
    (job,) = run(tmp_path)
    assert roots(job) == [("node2", 22, 6)]
    assert job.fault.key == "kernel.oom_killer" and job.fault.root


def test_an_hbm_ecc_event_alone_decides_by_the_fault_event_rule(tmp_path):
    ecc = "[EVENT] TSDRV(1,tsdrv):2025-10-24-11:39:58.101.202 [event.c:210] Event id=0x80e01801, Node Type=0x70; Sensor Type=0xc; event_state=1)\n"
    plog = {r.rank: timeout_lines(r, 32, t(40, r.rank)) for r in JOB}
    write_job(tmp_path, JOB, plog, extra={"node1/device-3/device-9_20251024.log": ecc})
    (job,) = run(tmp_path)
    assert job.verdict.rule == "fault-event" and job.verdict.culprits[0].node == "node1"
    assert job.fault.key == "npu.hbm_ecc" and "npu.health" in job.fault.checks


def test_two_faults_at_once_are_both_root_causes(tmp_path):
    plog = everyone_times_out(skip=(17,))
    plog[17] = []
    plog[13] = [cqe_line(JOB[13], JOB[21], t(40, 12))] + plog[13]
    oom = f"[ 8412.1] Out of memory: Killed process {JOB[3].pid} (python) total-vm:1kB\n"
    write_job(tmp_path, JOB, plog, extra={"node0/dmesg": oom})
    (job,) = run(tmp_path)
    assert {c.key for c in job.root_causes} == {"hccl.cqe_error", "kernel.oom_killer"}


def _root_info_lines(connected, need=8):
    root = JOB[0]
    prefix = f"[ERROR] HCCL({root.pid},all_reduce_test):2025-11-21-01:20:01.625.145 [topoinfo_exchange_server.cc:517] [1041362]"
    ids = ",".join(f"[{rank:016d}]" for rank in connected)
    return [
        prefix + "[InitGroupStage][Connection]topo exchange server get socket timeout! timeout[120 s]",
        prefix + f"[InitGroupStage][DisplayConnectionedRank]need connect rankNum is [{need}]",
        prefix + f"[InitGroupStage][DisplayConnectionedRank]connected rankinfo[LINE 0]: {ids};",
    ]


def test_ranks_that_never_reached_the_root_and_left_no_plog_died(tmp_path):
    small = JOB[:8]
    plog = {r.rank: [] for r in small if r.rank not in (3, 5)}
    plog[0] = _root_info_lines([0, 1, 2, 4, 6, 7])
    write_job(tmp_path, small, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "died" and [c.rank for c in job.verdict.culprits] == [3, 5]
    assert "6 of 8 ranks reached the root rank" in job.verdict.reason


def test_ranks_that_ran_but_never_reached_the_root_blame_the_roots_host(tmp_path):
    small = JOB[:8]
    plog = {r.rank: [] for r in small}
    plog[0] = _root_info_lines([0, 2, 4, 6])
    write_job(tmp_path, small, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "died" and roots(job) == [("node0", 0, 0)]
    assert "TCP backlog" in job.verdict.reason


def test_console_logs_alone_name_the_rank_when_the_inventory_resolves_the_peer(tmp_path):
    def ei0013(r, peer):
        return (
            f"[rank{r.rank}]: [PID: {r.pid}] 2025-12-04-21:59:08.232.310 Execution Error ROCE CQE(EI0013): An error CQE "
            f"occurred during operator execution. Local information: server {r.server}, device ID {r.device}, device IP "
            f"{r.device_ip}. Peer information: server {peer.server}, device ID {peer.device}, device IP {peer.device_ip}."
        )

    console = {r.rank: console_lines(r, t(40, 31)) for r in JOB}
    console[13] = [ei0013(JOB[13], JOB[21])] + console[13]
    write_job(tmp_path, JOB, {}, console)
    ips = {r.device_ip: (r.node, r.device) for r in JOB}
    (job,) = run(tmp_path, ips=ips)
    assert job.verdict.rule == "cqe-links" and roots(job) == [("node1", 13, 5)]
    assert job.fault.key == "hccl.ei0013"


def test_plogs_cut_before_their_init_lines_still_give_rank_and_communicator(tmp_path):
    write_job(tmp_path, JOB, {**everyone_times_out(skip=(17,)), 17: []})
    for path in tmp_path.glob("*/plog/*.log"):  # collect kept only the tail: the init lines are gone
        path.write_text("\n".join(path.read_text().splitlines()[2:]) + "\n")
    (job,) = run(tmp_path)
    assert job.job.name == GROUP and job.verdict.rule == "silent-ranks"
    assert [c.rank for c in job.verdict.culprits] == [17]


def _waiting_for(r, remote):
    """The console's EI0002 line (HCCL troubleshooting guide sample) naming the rank waited for."""
    return (
        f"[rank{r.rank}]: EI0002: [PID: {r.pid}] 2025-10-24-11:40:31.000.000 The wait execution of the Notify register "
        f"times out. Reason: The Notify register has not received the Notify record from remote rank [{remote}]."
    )


def test_notify_wait_chain_ends_at_the_rank_that_waits_on_nobody(tmp_path):
    small = JOB[:4]
    plog = {r.rank: timeout_lines(r, 4, t(40, 30)) for r in small}
    console = {0: [_waiting_for(small[0], 1)], 1: [_waiting_for(small[1], 2)], 2: [_waiting_for(small[2], 3)]}
    write_job(tmp_path, small, plog, console)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "notify-remote" and roots(job) == [("node0", 3, 3)]


def test_a_rank_waiting_on_itself_while_others_wait_on_it_is_the_root_and_a_cycle_is_no_verdict(tmp_path):
    from ascendprep.diagnose.rules import Context, rule_notify_remote

    small = JOB[:4]
    write_job(tmp_path / "a", small, {r.rank: timeout_lines(r, 4, t(40, 30)) for r in small},
              {0: [_waiting_for(small[0], 2)], 1: [_waiting_for(small[1], 2)], 2: [_waiting_for(small[2], "local")],
               3: [_waiting_for(small[3], 2)]})  # fmt: skip
    (job,) = run(tmp_path / "a")
    verdict = rule_notify_remote(Context(job.job))
    assert verdict is not None and [c.rank for c in verdict.culprits] == [2]
    write_job(tmp_path / "b", small, {r.rank: timeout_lines(r, 4, t(40, 30)) for r in small},
              {0: [_waiting_for(small[0], 1)], 1: [_waiting_for(small[1], 0)], 2: [_waiting_for(small[2], 0)],
               3: [_waiting_for(small[3], 0)]})  # fmt: skip
    (job,) = run(tmp_path / "b")
    verdict = rule_notify_remote(Context(job.job))
    assert verdict is not None and not verdict.decided and "deadlock" in verdict.reason
    assert sorted(s.rank for s in verdict.suspects) == [0, 1]


def _link_rows(r, dest, tls="DISABLE"):
    """The LINK_ERROR_INFO table HCCL prints when a link times out (a published plog sample's
    layout: header, then one row per peer)."""
    prefix = f"[ERROR] HCCL({r.pid},python3):2026-03-18-10:33:52.113.653 [hccl_socket_manager.cc:626] [{r.pid}]"
    return [
        f"[ERROR] HCCL({r.pid},python3):2026-03-18-10:33:52.113.403 [hccl_socket_manager.cc:797] [{r.pid}][Wait][LinkEstablish]"
        f"wait socket establish timeout, role[1] rank[{r.rank}] timeout[120 s]",
        prefix + " _________________________LINK_ERROR_INFO___________________________",
        prefix + " | dest_ip(user_rank) | dest_port | src_ip(user_rank) | src_port | MyRole | Status | TlsStatus |",
        prefix
        + f" | {dest.device_ip}({dest.rank}) | 16666 | {r.device_ip}({r.rank}) | 3234403008 | client | time out | {tls} | LinkInfo",
    ]


def test_socket_wait_chains_end_at_one_rank_or_form_a_mutual_wait(tmp_path):
    small = JOB[:4]
    write_job(tmp_path / "a", small, {0: _link_rows(small[0], small[1]), 1: _link_rows(small[1], small[3]),
                                      2: _link_rows(small[2], small[3]), 3: _link_rows(small[3], small[0])[:1]})  # fmt: skip
    # rank 3 timed out too but names no peer: it waits on nobody, every chain ends there.
    (job,) = run(tmp_path / "a")
    assert job.verdict.rule == "socket-chain" and roots(job) == [("node0", 3, 3)]
    write_job(tmp_path / "b", small, {0: _link_rows(small[0], small[1]), 1: _link_rows(small[1], small[0]),
                                      2: _link_rows(small[2], small[0]), 3: _link_rows(small[3], small[1])})  # fmt: skip
    (job,) = run(tmp_path / "b")
    assert job.verdict.rule == "socket-chain" and "mutual wait" in job.verdict.reason
    assert sorted(c.rank for c in job.verdict.culprits) == [0, 1]


def test_tls_status_in_the_link_table_that_differs_on_one_rank_is_the_root(tmp_path):
    small = JOB[:4]
    plog = {r.rank: _link_rows(r, small[(r.rank + 1) % 4], "ENABLE" if r.rank == 2 else "DISABLE") for r in small}
    write_job(tmp_path, small, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "tls-minority" and roots(job) == [("node0", 2, 2)]


def test_the_guide_lists_every_rule_in_the_order_they_are_tried():
    import re
    from pathlib import Path

    from ascendprep.diagnose.rules import RULES

    guide = (Path(__file__).parents[2] / "docs" / "when-a-job-fails.md").read_text()
    guide = guide.split("**How the root rank is decided.**")[1].split("Clocks of different nodes")[0]
    listed = re.findall(r"^\| `([a-z-]+)` \| ", guide, flags=re.M)
    assert listed == [name for name, _rule in RULES] + ["fault-event"]


def test_a_failure_the_job_resumed_from_is_not_the_one_that_ended_it(tmp_path):
    plog = everyone_times_out(skip=(17,))
    plog[17] = []
    # Rank 13 had an error CQE earlier, then the job resumed (resumable training); the CQE is history.
    resumed = f"[INFO] HCCL({JOB[13].pid},python):{t(30, 0)} [op_base.cc:1] [{JOB[13].pid}]HcclCommResume:success, take time [2 s]"
    plog[13] = [cqe_line(JOB[13], JOB[21], t(20, 0)), resumed] + plog[13]
    write_job(tmp_path, JOB, plog)
    (job,) = run(tmp_path)
    assert job.verdict.rule == "silent-ranks" and [c.rank for c in job.verdict.culprits] == [17]
    assert "hccl.cqe_error" not in {c.key for c in job.causes}
