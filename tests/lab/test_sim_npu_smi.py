"""Simulated npu-smi against the captures in ascend-reference §4."""

from __future__ import annotations

from ascendprep.lab.sim import cann

# Lines from the reference's 910B capture (values that depend on the device are checked by width).
REF_RULE = "+------------------------------------------------------------------------------------------------+"
REF_HEADER_A = "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
REF_HEADER_B = "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
REF_PROCESS = "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"
REF_NO_PROCESS_0 = "| No running processes found in NPU 0                                                            |"
REF_DOUBLE = "+===========================+===============+====================================================+"


def column_layout(line: str) -> list[int]:
    return [len(part) for part in line.split("|")]


def test_info_table_matches_reference_layout(lab):
    result = lab.npu_smi("node1", "info")
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == REF_RULE
    assert (
        lines[1] == "| npu-smi 24.1.rc2                 Version: 24.1.rc2                                             |"
    )
    assert lines[3:6] == [REF_HEADER_A, REF_HEADER_B, REF_DOUBLE]
    assert all(len(line) == 98 for line in lines)
    first, second = lines[6], lines[7]
    assert first.startswith("| 0     910B3               | OK            | ")
    assert second.startswith("| 0                         | 0000:C1:00.0  | 0           0    / 0          ")
    assert column_layout(first) == column_layout(REF_HEADER_A)
    assert "/ 65536         |" in second
    assert REF_PROCESS in lines
    assert lines.count(REF_NO_PROCESS_0.replace("NPU 0", "NPU 7")) == 1


def test_atlas800_and_a3_chip_names(make_lab):
    a1 = make_lab(product="atlas-800", nodes=("n1",))
    table = a1.npu_smi("n1", "info").stdout
    assert "| 0     910A                | OK            |" in table
    assert "920  / 13553      0    / 32768" in table
    a3 = make_lab(product="atlas-a3", nodes=("n1",), npus=16)
    lines = a3.npu_smi("n1", "info").stdout.splitlines()
    assert sum(line.startswith("| 0     Ascend910           | OK") for line in lines) == 2
    chip1 = next(i for i, line in enumerate(lines) if line.startswith("| 1     1                   |"))
    assert lines[chip1 - 1].split("|")[3].startswith(" -           ")
    listing = a3.npu_smi("n1", "info", "-l").stdout
    assert "\tTotal Count                    : 8\n" in listing
    assert "\tChip Count                     : 2\n" in listing


def test_info_list(lab):
    result = lab.npu_smi("node1", "info", "-l")
    lines = result.stdout.splitlines()
    assert lines[:5] == [
        "\tTotal Count                    : 8",
        "",
        "\tNPU ID                         : 0",
        "\tChip Count                     : 1",
        "",
    ]
    assert lines.count("\tChip Count                     : 1") == 8


def test_health_forms(lab):
    expected = (
        "\tHealth Status                  : OK\n\tError Code                     : NA\n"
        "\tError Information              : NA\n"
    )
    assert lab.npu_smi("node1", "info", "-t", "health", "-i", "3").stdout == expected
    assert lab.npu_smi("node1", "info", "-t", "health", "-i", "3", "-c", "0").stdout == expected
    assert lab.npu_smi("node1", "info", "-i", "3", "-c", "0", "-t", "health").stdout == expected


def test_board_reads_versions_from_the_node(lab):
    cann.install_cann_tree(
        lab.root("node2"), {"cann": "8.0.RC3", "driver": "24.1.rc3", "firmware": "7.5.0.2.220"}, "x86_64"
    )
    out = lab.npu_smi("node2", "info", "-t", "board", "-i", "2").stdout
    values = {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in out.splitlines())}
    assert values["NPU ID"] == "2"
    assert values["Software Version"] == "24.1.rc3"
    assert values["Firmware Version"] == "7.5.0.2.220"
    assert values["PCIe Bus Info"] == "0000:81:00.0"
    assert values["PCI Device ID"] == "0xD802"
    chip = lab.npu_smi("node2", "info", "-t", "board", "-i", "2", "-c", "0").stdout
    assert "\tChip Name                      : 910B3\n" in chip
    assert "24.1.rc3" in lab.npu_smi("node2", "info").stdout.splitlines()[1]


def test_unknown_ids_and_forms_fail_cleanly(lab):
    for args in (
        ("info", "-t", "board", "-i", "8"),
        ("info", "-t", "health", "-i", "0", "-c", "1"),
        ("info", "-t", "ecc", "-i", "0"),
        ("info", "-x"),
        ("set", "-t", "x"),
    ):
        result = lab.npu_smi("node1", *args)
        assert result.returncode == 1 and result.stdout == "" and result.stderr, args
        assert "Traceback" not in result.stderr
    assert lab.npu_smi("node1", "info", "-t", "board", "-i", "8").stderr.startswith("Invalid NPU ID: 8.")


def test_missing_driver_is_reported(lab):
    (lab.root("node1") / "usr/local/Ascend/driver/version.info").unlink()
    result = lab.npu_smi("node1", "info")
    assert result.returncode == 1 and "driver not installed" in result.stderr
