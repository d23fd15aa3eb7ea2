"""The host port block HCCL binds: 16 ports for CANN before 8.5, 32 from 8.5 on or when unsure."""

from __future__ import annotations

import pytest

from ascendprep.compat import hccl_port_count, hccl_port_range, parse_version


@pytest.mark.parametrize(
    "cann", ["6.3.RC2", "7.0.0", "8.0.RC2", "8.0.RC2.beta1", "8.0.RC3.20", "8.3.RC1", "8.2.RC1.alpha003"]
)
def test_cann_before_8_5_uses_16_ports(cann: str) -> None:
    assert hccl_port_range(cann) == (60000, 60015)


@pytest.mark.parametrize("cann", ["8.5.0.alpha001", "8.5.0-beta.1", "8.5.0", "8.5.2", "9.0.0", "9.1.0"])
def test_cann_from_8_5_uses_32_ports(cann: str) -> None:
    assert hccl_port_range(cann) == (60000, 60031)


@pytest.mark.parametrize("cann", [None, "latest", ""])
def test_unknown_cann_reserves_the_wider_block(cann: object) -> None:
    assert hccl_port_range(cann) == (60000, 60031)  # type: ignore[arg-type]
    assert hccl_port_count(cann) == 32  # type: ignore[arg-type]


def test_a_custom_base_port_moves_the_block() -> None:
    assert hccl_port_range("8.0.RC3", base_port=50000) == (50000, 50015)
    assert hccl_port_range(parse_version("cann", "9.0.0"), base_port=50000) == (50000, 50031)
    assert hccl_port_range("8.0.RC3", base_port=65520) == (65520, 65535)  # the documented maximum


@pytest.mark.parametrize("base", [1023, 65521, -1, True, "60000", 6e4])
def test_a_base_port_outside_the_documented_range_is_refused(base: object) -> None:
    with pytest.raises(ValueError, match=r"HCCL_IF_BASE_PORT must be an integer in \[1024, 65520\]"):
        hccl_port_range("8.0.RC3", base_port=base)  # type: ignore[arg-type]


def test_a_32_port_block_that_would_pass_65535_is_refused() -> None:
    with pytest.raises(ValueError, match="at most 65504"):
        hccl_port_range("9.0.0", base_port=65510)


def test_a_version_of_another_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="needs a CANN version"):
        hccl_port_range(parse_version("driver", "24.1.rc2"))
