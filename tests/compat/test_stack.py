"""check_stack against real rows of the shipped compat.yaml: good combinations pass, bad ones fail
with an error that names the versions, unknown ones warn."""

from __future__ import annotations

from datetime import date
from typing import Dict, List, Optional

import pytest

from ascendprep.compat import CompatIssue, check_stack, has_errors, load_compat_data, parse_version

TODAY = date(2026, 11, 20)


def run(chip: Optional[str] = None, today: date = TODAY, **versions: str) -> List[CompatIssue]:
    return check_stack(versions, chip=chip, today=today)


def by_id(issues: List[CompatIssue]) -> Dict[str, CompatIssue]:
    found: Dict[str, CompatIssue] = {}
    for issue in issues:
        assert issue.id not in found, f"two issues with id {issue.id}"
        found[issue.id] = issue
    return found


def only(issues: List[CompatIssue], issue_id: str) -> CompatIssue:
    matching = [i for i in issues if i.id == issue_id]
    assert len(matching) == 1, f"expected one {issue_id}, got {[(i.id, i.message) for i in issues]}"
    return matching[0]


def ids(issues: List[CompatIssue]) -> List[str]:
    return [i.id for i in issues]


# ---- whole stacks ---------------------------------------------------------------------------


def test_a_documented_current_stack_has_no_issues() -> None:
    # TorchNPU 26.1.0 row: torch_npu 2.7.1.post8 / torch 2.7.1 / CANN 9.1.0 / HDK 26.1.0.
    issues = run(
        cann="9.1.0", driver="26.1.0", torch="2.7.1+cpu", torch_npu="2.7.1.post8", torchvision="0.22.1", python="3.11.9"
    )
    assert issues == []


def test_nothing_known_means_nothing_checked() -> None:
    assert run() == []
    assert check_stack({"cann": None, "torch": None}, today=TODAY) == []
    assert run(torchvision="0.16.0") == []


def test_a_broken_stack_reports_every_pairing_and_is_an_error() -> None:
    issues = run(torch_npu="2.2.0.post2", torch="2.1.0", torchvision="0.17.0", python="3.12")
    assert {
        "compat.torch_npu_torch",
        "compat.torch_npu_python",
        "compat.torch_torchvision",
        "compat.torch_python",
        "compat.torch_npu_eol",
    } <= set(ids(issues))
    assert has_errors(issues)


def test_every_issue_cites_sources_that_exist_and_has_a_one_line_fix() -> None:
    data = load_compat_data()
    stacks = [
        dict(torch_npu="2.2.0.post2", torch="2.1.0", torchvision="0.17.0", python="3.12"),
        dict(torch_npu="2.1.0.post17", cann="8.5.0", driver="24.1.rc3", python="3.12", torch="2.5.1+cu121"),
        dict(torch_npu="2.7.1.post10", cann="9.0.0", driver="25.5.0", torch="2.7.1", torchvision="0.22.0"),
        dict(torch_npu="2.11.0rc1", cann="8.4.0", driver="25.0.rc1", firmware="7.7.0.1.231", python="3.9"),
        dict(cann="8.0.RC3", driver="24.1.rc1", firmware="7.5.0.1.129", torch="2.14.0", torchvision="0.29.0"),
    ]
    seen = set()
    for stack in stacks:
        for issue in run(**stack):
            seen.add(issue.id)
            assert issue.severity in ("error", "warning")
            assert set(issue.sources) <= set(data.sources), issue
            assert issue.message and issue.fix and "\n" not in issue.fix
            assert issue.to_dict()["sources"] == list(issue.sources)
    assert len(seen) >= 10


# ---- torch_npu <-> torch ----------------------------------------------------------------------


def test_torch_npu_with_its_own_torch_passes() -> None:
    assert "compat.torch_npu_torch" not in ids(run(torch_npu="2.1.0.post6", torch="2.1.0+cpu"))
    assert "compat.torch_npu_torch" not in ids(run(torch_npu="2.1.0.post6", torch="2.1.0"))  # aarch64


def test_torch_npu_built_for_another_torch_is_an_error_naming_both() -> None:
    issue = only(run(torch_npu="2.1.0.post6", torch="2.2.0"), "compat.torch_npu_torch")
    assert issue.severity == "error"
    assert "2.1.0.post6" in issue.message and "2.2.0" in issue.message
    assert "torch==2.1.0" in issue.fix and "2.2.0.post2" in issue.fix  # or the wheel for torch 2.2.0
    assert "pt_compat" in issue.sources


def test_the_one_row_whose_torch_differs_from_its_prefix_is_honoured() -> None:
    assert "compat.torch_npu_torch" not in ids(run(torch_npu="1.5.0.post3", torch="1.8.1"))
    assert only(run(torch_npu="1.5.0.post3", torch="1.5.0"), "compat.torch_npu_torch").severity == "error"


def test_an_undocumented_torch_npu_still_pins_its_torch() -> None:
    issues = run(torch_npu="2.14.0", torch="2.14.0.dev20260719+cpu")
    pin = only(issues, "compat.torch_npu_torch")
    assert pin.severity == "error" and pin.sources == ("pt_setup",)
    unknown = only(issues, "compat.torch_npu_release")
    assert unknown.severity == "warning" and "2.14.0" in unknown.message


def test_a_branch_head_version_is_recognised_but_still_unknown() -> None:
    issue = only(run(torch_npu="2.8.0.post5"), "compat.torch_npu_release")
    assert issue.severity == "warning"
    assert "v2.8.0-26.0.0" in issue.message and "2.8.0.post4" in issue.fix


def test_the_26_1_1_packages_are_documented_with_cann_9_1() -> None:
    """TorchNPU 26.1.1 (the 26.1.0 branches' heads, e.g. 2.7.1.post10) is a documented release now."""
    issues = run(torch_npu="2.7.1.post10", torch="2.7.1", cann="9.1.0", python="3.11")
    assert "compat.torch_npu_release" not in ids(issues)
    assert "compat.torch_npu_cann" not in ids(issues)


def test_an_atlas_350_needs_cann_9_0_and_its_25_7_driver_line() -> None:
    old = run(chip="atlas-350", cann="8.5.0", driver="25.5.1")
    assert only(old, "compat.chip_cann").severity == "error" and "9.0.0" in only(old, "compat.chip_cann").message
    assert only(old, "compat.chip_driver").severity == "error"
    assert "Atlas 350" in only(old, "compat.chip_driver").message
    new = run(chip="atlas-350", cann="9.1.0", driver="25.7.rc1")
    assert "compat.chip_cann" not in ids(new) and "compat.chip_driver" not in ids(new)
    # the same old stack on a 910B is judged by the 910B rules only
    assert "compat.chip_cann" not in ids(run(chip="910b", cann="8.5.0", driver="25.5.1"))


@pytest.mark.parametrize(
    "torch,severity",
    [("2.5.1+cu121", "error"), ("2.7.1+rocm6.2", "error"), ("2.1.0+cu118", "warning")],
)
def test_a_gpu_build_of_torch_is_flagged(torch: str, severity: str) -> None:
    issue = only(run(torch=torch), "compat.torch_build")
    assert issue.severity == severity and "download.pytorch.org/whl/cpu" in issue.fix


def test_cpu_builds_of_torch_are_fine() -> None:
    assert "compat.torch_build" not in ids(run(torch="2.5.1+cpu.cxx11.abi"))


# ---- torch_npu <-> CANN -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "torch_npu,cann",
    [
        ("2.1.0.post8", "8.0.RC3"),  # paired release
        ("2.1.0.post8", "8.0.RC3.beta1"),  # its community edition
        ("2.1.0.post17", "8.0.RC2"),  # 7.2.0 compatibility list
        ("2.1.0.post17", "8.2.RC1"),
        ("2.9.0.post6", "8.5.2"),  # 26.1.0 matrix: 8.5.X
        ("2.9.0.post6", "9.0.0"),
        ("2.7.1.post2", "9.1.0"),  # 7.3.X row of the 26.1.0 matrix (cann_compatible_alt)
        ("2.1.0.post4", "8.0.RC1"),
        ("2.1.0.post3", "8.0.RC1"),  # the alternative spelling of that row
        ("1.11.0.post3", "6.3.RC3.1"),  # four-part hotfix CANN
    ],
)
def test_documented_torch_npu_cann_pairs_pass(torch_npu: str, cann: str) -> None:
    assert "compat.torch_npu_cann" not in ids(run(torch_npu=torch_npu, cann=cann))


def test_cann_older_than_the_declared_range_is_an_error_with_a_wheel_that_fits() -> None:
    issue = only(run(torch_npu="2.1.0.post17", cann="8.0.RC1"), "compat.torch_npu_cann")
    assert issue.severity == "error" and "older" in issue.message
    assert "8.0.RC1" in issue.message and "2.1.0.post17" in issue.message
    assert "2.1.0.post4" in issue.fix  # the torch 2.1.0 wheel published with CANN 8.0.RC1


def test_cann_newer_than_the_declared_range_is_an_error() -> None:
    issue = only(run(torch_npu="2.1.0.post17", cann="8.5.0"), "compat.torch_npu_cann")
    assert issue.severity == "error" and "newer" in issue.message
    assert "8.3.RC1" in issue.fix


def test_wildcard_ranges_bound_the_declared_span() -> None:
    issue = only(run(torch_npu="2.9.0.post6", cann="8.3.RC1"), "compat.torch_npu_cann")
    assert issue.severity == "error"  # 26.1.0 declares 8.5.X .. 9.1.X only


def test_a_prerelease_cann_inside_the_span_is_unknown_not_wrong() -> None:
    issue = only(run(torch_npu="2.9.0.post6", cann="9.1.0-beta.3"), "compat.torch_npu_cann")
    assert issue.severity == "warning" and "pre-release" in issue.message


def test_an_unlisted_cann_inside_the_span_is_unknown() -> None:
    issue = only(run(torch_npu="2.1.0.post17", cann="8.0.RC3.alpha002"), "compat.torch_npu_cann")
    assert issue.severity == "warning"


def test_releases_without_a_compatibility_list_only_know_their_own_cann() -> None:
    issue = only(run(torch_npu="1.11.0.post8", cann="7.0.1"), "compat.torch_npu_cann")
    assert issue.severity == "warning" and "7.0.0" in issue.message


def test_a_prerelease_torch_npu_is_flagged_and_pairs_only_with_its_cann() -> None:
    issues = run(torch_npu="2.11.0rc1", cann="9.0.0")
    assert only(issues, "compat.torch_npu_prerelease").severity == "warning"
    assert "2.11.0" in only(issues, "compat.torch_npu_prerelease").fix
    assert only(issues, "compat.torch_npu_cann").severity == "warning"
    assert "compat.torch_npu_cann" not in ids(run(torch_npu="2.11.0rc1", cann="8.5.0"))


# ---- Python -----------------------------------------------------------------------------------


def test_a_listed_python_passes_at_any_patch_level() -> None:
    assert "compat.torch_npu_python" not in ids(run(torch_npu="2.1.0.post17", python="3.11.4"))


def test_an_unsupported_python_is_an_error() -> None:
    issue = only(run(torch_npu="2.1.0.post17", python="3.12.3"), "compat.torch_npu_python")
    assert issue.severity == "error" and "3.8-3.11" in issue.message and "3.12.3" in issue.message


def test_a_python_only_the_per_line_table_lists_is_a_warning() -> None:
    # 7.3.0's 2.7.1.post2 lists 3.9-3.12; COMPATIBILITY.md lists 3.13 for the 2.7.1 line.
    issue = only(run(torch_npu="2.7.1.post2", python="3.13"), "compat.torch_npu_python")
    assert issue.severity == "warning" and "python_by_torch" not in issue.message


def test_the_minimum_patch_level_is_enforced() -> None:
    issue = only(run(torch_npu="1.11.0.post8", python="3.7.4"), "compat.torch_npu_python")
    assert issue.severity == "error" and "3.7.5" in issue.message
    assert "compat.torch_npu_python" not in ids(run(torch_npu="1.11.0.post8", python="3.7.5"))


def test_an_unknown_torch_npu_is_held_to_its_torch_lines_python_table() -> None:
    issue = only(run(torch_npu="2.7.1.post10", python="3.8"), "compat.torch_npu_python")
    assert issue.severity == "error"
    assert "compat.torch_npu_python" not in ids(run(torch_npu="2.7.1.post10", python="3.12"))


@pytest.mark.parametrize("torch,python", [("2.1.0+cpu", "3.11"), ("1.13.1", "3.7.2"), ("2.9.0", "3.14.0")])
def test_torch_python_inside_the_range_passes(torch: str, python: str) -> None:
    assert "compat.torch_python" not in ids(run(torch=torch, python=python))


@pytest.mark.parametrize("torch,python", [("2.1.0", "3.12"), ("1.13.1", "3.7.1"), ("2.9.0", "3.9.18")])
def test_torch_python_outside_the_range_is_an_error(torch: str, python: str) -> None:
    issue = only(run(torch=torch, python=python), "compat.torch_python")
    assert issue.severity == "error" and python in issue.message


def test_torch_python_for_an_unknown_torch_line_is_a_warning() -> None:
    assert only(run(torch="2.14.0", python="3.12"), "compat.torch_python").severity == "warning"


# ---- torch <-> torchvision ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "torch,torchvision",
    [("2.1.0+cpu", "0.16.0"), ("2.3.1", "0.18.1"), ("1.8.1", "0.9.1"), ("2.2.0", "0.17.2"), ("2.13.0", "0.28.0+cpu")],
)
def test_matching_torchvision_passes(torch: str, torchvision: str) -> None:
    assert "compat.torch_torchvision" not in ids(run(torch=torch, torchvision=torchvision))


def test_torchvision_of_another_torch_line_is_an_error_with_the_exact_pin() -> None:
    issue = only(run(torch="2.1.0", torchvision="0.17.0"), "compat.torch_torchvision")
    assert issue.severity == "error"
    assert issue.fix == "install torchvision 0.16.0 for torch 2.1.0"


def test_torchvision_of_the_right_line_but_another_patch_is_a_warning() -> None:
    issue = only(run(torch="2.3.1", torchvision="0.18.0"), "compat.torch_torchvision")
    assert issue.severity == "warning" and "0.18.1" in issue.fix


def test_torchvision_for_an_unknown_torch_line_is_a_warning() -> None:
    assert only(run(torch="2.14.0", torchvision="0.29.0"), "compat.torch_torchvision").severity == "warning"


# ---- CANN <-> driver / firmware ---------------------------------------------------------------


@pytest.mark.parametrize(
    "cann,driver",
    [
        ("9.0.0", "26.0.rc1"),  # release-management table
        ("9.0.0", "25.5.1"),
        ("8.5.0", "25.3.rc1"),  # 25.3.X
        ("8.5.0", "25.0.rc1.1"),
        ("8.2.RC1", "25.0.rc1.1"),  # hotfix of the listed 25.0.RC1
        ("8.2.RC1", "24.1.rc2"),
        ("8.0.RC1.beta1", "24.1.RC1"),  # community spelling of CANN
        ("8.0.RC3", "24.1.rc2"),  # docs install page
        ("8.1.RC1", "24.1.rc2"),  # docs page and deployer disagree; both are in the data
        ("8.1.RC1", "25.0.RC1"),
        ("9.1.0", "25.7.RC1"),  # Atlas 350 line
    ],
)
def test_documented_cann_driver_pairs_pass(cann: str, driver: str) -> None:
    assert "compat.cann_driver" not in ids(run(cann=cann, driver=driver))


@pytest.mark.parametrize("cann,driver", [("9.0.0", "25.5.0"), ("8.5.0", "24.1.rc3"), ("8.2.RC1", "24.1.rc1")])
def test_a_driver_older_than_an_official_table_allows_is_an_error(cann: str, driver: str) -> None:
    issue = only(run(cann=cann, driver=driver), "compat.cann_driver")
    assert issue.severity == "error" and cann in issue.message and driver in issue.message
    assert issue.fix.startswith("install Ascend HDK ")


def test_a_driver_newer_than_the_table_is_unknown_not_wrong() -> None:
    issue = only(run(cann="9.0.0", driver="26.1.0"), "compat.cann_driver")
    assert issue.severity == "warning" and "26.0.RC1" in issue.message


def test_a_driver_outside_a_secondary_source_is_only_a_warning() -> None:
    # 8.3.RC1 rests on the deployer's required-NPU field alone.
    assert only(run(cann="8.3.RC1", driver="25.2.0"), "compat.cann_driver").severity == "warning"
    # 8.0.RC3 rests on the docs install page (one driver, not a range).
    assert only(run(cann="8.0.RC3", driver="24.1.rc1"), "compat.cann_driver").severity == "warning"


def test_a_cann_without_driver_data_is_a_warning() -> None:
    issue = only(run(cann="8.4.0", driver="25.0.rc1"), "compat.cann_driver")
    assert issue.severity == "warning" and issue.sources == ()


def test_chip_narrows_the_docs_install_page() -> None:
    # CANN 7.0.0: 910b -> driver 23.0.3, 310p -> driver 23.0.1.
    assert "compat.cann_driver" not in ids(run(cann="7.0.0", driver="23.0.1"))
    assert "compat.cann_driver" not in ids(run(cann="7.0.0", driver="23.0.1", chip="310p"))
    assert only(run(cann="7.0.0", driver="23.0.1", chip="910b"), "compat.cann_driver").severity == "warning"


def test_the_firmware_the_docs_name_passes_and_any_other_is_unknown() -> None:
    assert "compat.cann_firmware" not in ids(run(cann="8.0.RC3", firmware="7.3.0.1.231"))
    issue = only(run(cann="8.0.RC3", firmware="7.5.0.1.129"), "compat.cann_firmware")
    assert issue.severity == "warning" and "7.3.0.1.231" in issue.message


def test_a_cann_with_no_firmware_data_warns_rather_than_passing() -> None:
    issue = only(run(cann="8.5.0", firmware="7.7.0.1.231"), "compat.cann_firmware")
    assert issue.severity == "warning" and "compatible_version_fw" in issue.fix


# ---- end of life -----------------------------------------------------------------------------


def test_an_eol_torch_npu_points_at_the_newest_release_for_its_torch() -> None:
    issue = only(run(torch_npu="2.1.0.post6"), "compat.torch_npu_eol")
    assert issue.severity == "warning" and "2.1.0.post17" in issue.fix


def test_an_eol_pytorch_line_is_flagged_with_its_date() -> None:
    issue = only(run(torch="2.2.0"), "compat.torch_line_eol")
    assert issue.severity == "warning" and "2025-10-14" in issue.message
    assert "2.7.1" in issue.fix  # the maintained long-term-support line


def test_end_of_maintenance_is_judged_against_today() -> None:
    assert "compat.torch_line_eol" not in ids(run(torch="2.5.1", today=date(2026, 8, 7)))
    issue = only(run(torch="2.5.1", today=date(2026, 8, 8)), "compat.torch_line_eol")
    assert "2026-08-08" in issue.message


def test_a_line_missing_from_the_policy_table_gets_no_eol_verdict() -> None:
    assert "compat.torch_line_eol" not in ids(run(torch="2.12.0"))


# ---- input handling --------------------------------------------------------------------------


def test_an_unreadable_version_is_an_error_and_the_rest_is_still_checked() -> None:
    issues = run(cann="latest", torch_npu="2.1.0.post6", torch="2.2.0")
    unreadable = only(issues, "compat.version_unreadable")
    assert unreadable.severity == "error" and "'latest'" in unreadable.message
    assert "compat.torch_npu_torch" in ids(issues)


def test_parsed_versions_are_accepted() -> None:
    issues = check_stack({"torch": parse_version("torch", "2.1.0"), "torchvision": "0.17.0"}, today=TODAY)
    assert ids(issues) == ["compat.torch_torchvision"]


def test_programming_errors_raise() -> None:
    with pytest.raises(ValueError, match="unknown stack keys"):
        check_stack({"cuda": "12.1"})
    with pytest.raises(ValueError, match="given a driver version"):
        check_stack({"cann": parse_version("driver", "24.1.rc2")})


def test_output_is_deterministic() -> None:
    stack = dict(torch_npu="2.1.0.post17", cann="8.5.0", driver="24.1.rc3", python="3.12", torch="2.5.1+cu121")
    assert run(**stack) == run(**stack)
    assert by_id(run(**stack))  # ids are unique within one result
