"""The virtual Ascend cluster: network namespaces with real sshd, simulated tools, faults.

Entry points: :class:`ascendprep.lab.lab.Lab` (Python API), ``ascendprep lab`` (cli.py),
:mod:`ascendprep.lab.testing` (labs for tests and benchmarks; the pytest fixtures built on it
are in the repository's tests/labsupport.py). The simulated ``hccn_tool`` / ``npu-smi`` live in
:mod:`ascendprep.lab.sim`. Nothing is imported here: the simulated tools start through this
package hundreds of times per run and must not pay for the infrastructure's imports.
"""
