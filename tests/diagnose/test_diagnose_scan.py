"""Reading a log: kinds of file, every knowledge-base family on real lines, hostile bytes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from ascendprep.base.limits import DIAGNOSE_LINE_MAX_CHARS, DIAGNOSE_READ_CHUNK_BYTES
from ascendprep.diagnose.model import CONSOLE, DEVICE, KERNEL, PLOG, LogFile
from ascendprep.diagnose.scan import Scanner, component_of, kind_of
from ascendprep.verify.knowledge import knowledge

LINES = yaml.safe_load((Path(__file__).parents[1] / "fixtures" / "diagnose" / "kb_lines.yaml").read_text())


def scan(text, kind=PLOG, name="plog-1_2.log", **extra):
    events = []
    stats = Scanner(knowledge()).scan(
        io.BytesIO(text if isinstance(text, bytes) else text.encode()),
        LogFile(name, "n1", kind, **extra),
        events.append,
    )
    return events, stats


def test_every_entry_has_a_line_from_its_source_in_the_fixture():
    assert set(LINES) == {entry.key for entry in knowledge().entries}


@pytest.mark.parametrize("key", sorted(LINES))
def test_each_entry_matches_its_lines_and_reads_their_fields(key):
    for sample in LINES[key]:
        events, _ = scan("noise before\n" + sample["line"] + "\nnoise after\n", kind=sample["kind"])
        matched = [e for e in events if e.key is not None]
        assert [e.key for e in matched] == [key], (sample["line"], [e.key for e in matched])
        assert matched[0].line == 2
        for name, value in (sample.get("attrs") or {}).items():
            assert matched[0].attr(name) == value, name


def test_the_torch_npu_line_gives_pid_device_and_rank_and_a_cann_code_its_component():
    events, _ = scan(
        LINES["torch.dist_hccl_failed"][0]["line"] + "\n" + LINES["cann.code"][0]["line"] + "\n", kind=CONSOLE
    )
    torch, cann = [e for e in events if e.key]
    assert (torch.pid, torch.device, torch.rank) == (540989, 0, 1)
    assert cann.code == "EE9999" and cann.component == "Runtime" and component_of("EI0002") == "HCCL"


def test_a_kernel_line_outside_a_kernel_log_is_not_matched():
    events, _ = scan(LINES["kernel.oom_killer"][0]["line"] + "\n", kind=PLOG)
    assert [e.key for e in events if e.key] == []


def test_line_numbers_hold_across_chunks_and_lines_without_a_literal_are_never_split():
    filler = "[INFO] GE(1,python):2025-10-24-11:00:00.000.000 nothing to see here\n"
    count = DIAGNOSE_READ_CHUNK_BYTES // len(filler) + 7
    text = filler * count + LINES["hccl.cqe_error"][0]["line"] + "\n" + filler * 3
    events, stats = scan(text)
    (cqe,) = [e for e in events if e.key]
    assert cqe.line == count + 1 and stats.lines == count + 4


def test_non_utf8_bytes_are_replaced_and_the_line_still_matches():
    raw = b"\xff\xfe garbage \xc3\x28\n" + LINES["hccl.cqe_error"][0]["line"].encode() + b" \xe9\xe9\n"
    events, stats = scan(raw)
    assert [e.key for e in events if e.key] == ["hccl.cqe_error"] and stats.lines == 2


def test_a_line_longer_than_the_cap_is_cut_counted_and_the_next_line_read(monkeypatch):
    huge = b"[ERROR] " + b"x" * (DIAGNOSE_LINE_MAX_CHARS * 3) + b" cqe error status[12] tail\n"
    events, stats = scan(huge + LINES["hccl.cqe_error"][0]["line"].encode() + b"\n")
    assert stats.truncated_lines == 1
    assert [(e.key, e.line) for e in events if e.key] == [("hccl.cqe_error", 2)]


def test_a_last_line_without_newline_is_read():
    events, stats = scan(LINES["hccl.cqe_error"][0]["line"])
    assert [e.line for e in events if e.key] == [1] and stats.lines == 1


def test_a_file_that_repeats_an_error_keeps_only_the_first_events_as_evidence():
    events, stats = scan((LINES["hccl.cqe_error"][0]["line"] + "\n") * 500)
    assert len([e for e in events if e.key]) == 20 and stats.events == 500


@pytest.mark.parametrize(
    ("name", "head", "under", "want"),
    [
        ("plog-40013_20251024111652406.log", b"", False, (PLOG, 40013, None)),
        ("plog-40013_20251024111652406.log", b"", True, (DEVICE, 40013, None)),
        ("device-77_20251024111652406.log", b"", False, (DEVICE, 77, None)),
        ("rank-12.txt", b"", False, (CONSOLE, None, 12)),
        ("worker-3.log", b"", False, (CONSOLE, None, 3)),
        ("messages-20251024", b"", False, (KERNEL, None, None)),
        ("dmesg", b"", False, (KERNEL, None, None)),
        ("job.out", b"[ERROR] HCCL(1,python):2025-10-24-11:00:00.000.000 x", False, (PLOG, None, None)),
        ("boot.txt", b"[    1.000000] Linux version 5.10", False, (KERNEL, None, None)),
        ("train.out", b"step 1\nTraceback (most recent call last):\n", False, (CONSOLE, None, None)),
        ("model.bin", b"\x00\x01\x02", False, (None, None, None)),
        ("notes.txt", b"hello", False, (None, None, None)),
    ],
)
def test_kind_of_a_file_from_its_name_else_its_first_bytes(name, head, under, want):
    assert kind_of(name, head, under) == want


def test_a_plog_matches_faults_on_error_lines_and_reads_facts_on_info_lines_only():
    info_fault = "[INFO] HCCL(7,python):2025-10-24-11:00:00.000.000 [x.cc:1] [7]cqe error status[12] seen in a trace\n"
    fact = "[INFO] HCCL(7,python):2025-10-24-11:00:00.000.000 [x.cc:2] [7]rank[3], server[10.0.0.1], logicDevId[3], deviceIp[192.168.3.9]\n"
    events, _ = scan(info_fault + fact + LINES["hccl.cqe_error"][0]["line"] + "\n")
    assert [(e.key, e.line) for e in events if e.key] == [("hccl.cqe_error", 3)]
    assert [(e.attr("fact"), e.attr("device_ip"), e.line) for e in events if e.key is None][0] == (
        "device_ip",
        "192.168.3.9",
        2,
    )


def test_a_very_long_line_in_a_console_log_is_cut_and_counted():
    huge = b"y" * (DIAGNOSE_LINE_MAX_CHARS * 2) + b" EI0002 at the end\n"
    events, stats = scan(huge * 2 + LINES["hccl.socket_timeout"][0]["line"].encode() + b"\n", kind=CONSOLE)
    assert [(e.key, e.line) for e in events if e.key] == [("hccl.socket_timeout", 3)] and stats.truncated_lines == 2


def test_an_npu_event_code_carries_the_vendors_fault_level_from_the_health_code_table():
    from ascendprep.diagnose.analyse import causes_of

    events, _ = scan(
        LINES["npu.hardware_event"][0]["line"] + "\n" + LINES["npu.hbm_ecc"][0]["line"] + "\n", kind=DEVICE
    )
    causes = {c.key: c for c in causes_of(events, knowledge())}
    assert causes["npu.hardware_event"].title == "NPU hardware event 0x80CB8009: AIV bus access error"
    assert causes["npu.hardware_event"].vendor_level.startswith("RestartRequest: ")
    assert causes["npu.hbm_ecc"].vendor_level.startswith("RestartBusiness: ")


class _Endless(io.RawIOBase):
    """A plog of ``size`` bytes made on the fly: INFO lines, one error at the very end."""

    def __init__(self, size: int, last: bytes) -> None:
        self.left = size
        self.last = last
        self.block = (
            b"[INFO] HCCL(7,python):2025-10-24-11:17:00.305.623 [x.cc:56][7]Entry-HcclAllReduce: tag[t], count[1]\n"
            * 4096
        )

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            data, self.last = self.last, b""
        else:
            data = self.block[: min(len(buffer), self.left)]
            self.left -= len(data)
        buffer[: len(data)] = data
        return len(data)


def _peak(chunks: int) -> int:
    import tracemalloc

    size = chunks * DIAGNOSE_READ_CHUNK_BYTES
    stream = io.BufferedReader(_Endless(size, LINES["hccl.cqe_error"][0]["line"].encode() + b"\n"))
    events = []
    tracemalloc.start()
    stats = Scanner(knowledge()).scan(stream, LogFile("plog-7_1.log", "n1", PLOG), events.append)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [e.key for e in events if e.key] == ["hccl.cqe_error"] and stats.lines > size // 200
    return peak


def test_memory_stays_at_a_few_chunks_however_long_the_file():
    # The chunk read, the chunk joined to the last one's partial line, and its whole lines: ~4 chunks.
    small, large = _peak(4), _peak(24)
    assert large < 5 * DIAGNOSE_READ_CHUNK_BYTES and large < small * 1.1, (small, large)
