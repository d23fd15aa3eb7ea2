"""Driver generations the simulated tools can speak, chosen per lab node (``lab up --driver-profile``).

Real fleets mix driver releases, and each prints its own spellings; the parsers accept them all,
and this switch makes the lab print them so those paths run end to end. Stdlib only (the tools
import it on every call).

``current`` (the default) is what the simulator printed before profiles existed: the 910B/A3
driver source's forms (Atlas 800 keeps its product's older ``-link_stat``/``-tls`` lines).

``legacy`` is an older driver, from published captures (Ascend/mind-cluster fault-diagnosis test
data of an Atlas 800 host, the HCCL fault-diagnosis docs, npu-smi help and error texts):

* ``-ip -g`` without an IP prints nothing and exits 0 (not ``Get ipconf failed``, exit 13);
* ``-link_stat -g`` lines carry ``[device N]`` and no ``link down count`` line;
* ``-net_health -g`` says ``Socket failed`` where the current driver says ``Fault`` (a port that
  cannot send; [I] from a capture where the module was absent and the Rx LoS flags set);
* ``-tls -g``: no ``tls preconfigured[...]``; per certificate (``pub``, ``ca1``, ``ca2``) only
  ``issuer``/``start_time``/``end_time`` lines, indented with 9 spaces;
* ``-stat -g``: the short form, ``packet statistics:`` with only ``roce_rx_err_pkt_num`` and
  ``roce_tx_err_pkt_num``;
* ``-speed -g``: ``The command is not supported on this product.`` (exit 13);
* ``-lldp -g``: the switch sends no System Name TLV and a multi-line System Description; with no
  neighbour the query fails, ``Command execute failed!`` (exit 1), where ``current`` prints nothing;
* npu-smi: an unknown ``-i`` value answers ``Error parameter of -i`` plus the usage text, an
  out-of-range card ``Invalid card id.``; an alarm lists several codes and continues its
  ``Error Information`` on lines with an empty key; a first-generation 910 shows as ``910B``.
"""

from __future__ import annotations

CURRENT = "current"
LEGACY = "legacy"
DRIVER_PROFILES = (CURRENT, LEGACY)
DEFAULT_DRIVER_PROFILE = CURRENT


def check_profile(name: object, where: str) -> str:
    """``name`` if it is a known profile; ValueError naming the known ones otherwise."""
    if name not in DRIVER_PROFILES:
        raise ValueError(f"{where}: unknown driver profile {name!r} (known: {', '.join(DRIVER_PROFILES)})")
    return str(name)


def profile_of(doc: dict) -> str:
    """The driver profile of a node document (documents written before profiles: ``current``)."""
    return doc.get("driver_profile") or DEFAULT_DRIVER_PROFILE


def is_legacy(doc: dict) -> bool:
    return profile_of(doc) == LEGACY
