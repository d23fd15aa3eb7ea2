"""Simulated Ascend hardware and tools for the lab: hccn_tool, npu-smi, version files, faults.

Modules: ``state`` (live device model in the shared state dir, faults, cabling), ``fabric`` (the
simulated switch: reachability, net_health, LLDP), ``hccn_tool`` / ``npu_smi`` (the tools,
``python -m``), ``hccnconf`` (/etc/hccn.conf semantics), ``cann`` / ``tools`` (files installed
into a node). Keep this package import-free: every simulated tool call starts here.
"""
