"""ascendprep: prepare Huawei Ascend NPU training clusters, from inventory to a passing all-reduce."""

__version__ = "0.1.0"
