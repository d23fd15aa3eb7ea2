"""The compatibility matrix is read by libyaml's loader where PyYAML has it, with the same values.

Every plan and apply reads the 44 KB matrix; the pure-Python loader cost ~0.08 s of CPU of each.
"""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from ascendprep.compat import data


def _packaged_text() -> str:
    return resources.files(data.DATA_PACKAGE).joinpath(data.DATA_PATH).read_text(encoding="utf-8")


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_the_matrix_is_read_with_libyaml() -> None:
    assert data._SAFE_LOADER is yaml.CSafeLoader


def test_libyaml_reads_the_packaged_matrix_to_the_same_values_as_pure_python() -> None:
    text = _packaged_text()
    assert yaml.load(text, Loader=data._SAFE_LOADER) == yaml.safe_load(text)
    assert data.parse_compat_text(text) == data.load_compat_data()
