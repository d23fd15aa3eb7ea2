"""The simulated ``-stat -g`` counters: values that depend on the time they are read.

A real port's counters run on: traffic counters grow with traffic, a healthy idle port's error
counters sit still at what they gathered since boot, and a failing port's grow steadily. So the
simulator computes each counter when it is read (stdlib only, like every simulated tool):

* a clean port: small counts since boot that never move (a few FCS and RoCE errors, information
  only), a trickle of PFC frames (2/s, far below any storm) and some traffic; growing below every
  threshold of ``network.counters``;
* lab fault ``fcs-errors`` (per node and NPU): ``mac_rx_fcs_err_pkt_num`` grows 50 a second from
  the moment it was injected; ``pfc-storm``: ``mac_rx_pfc_pkt_num`` (and priority 3's) grows
  20,000 a second;
* events the simulator counts (the frames of ``-ping``) live in the device's ``counters``;
* ``-stat -c`` clears: every counter then counts from that moment (``counters_cleared_at``);
* healing a growing fault stops the growth but keeps what it counted (:func:`bank_growth`): a
  real port's FCS count does not fall when its cable is reseated, only ``-stat -c`` zeroes it.

Times are the node's wall clock; the time-driven part counts from a fixed origin, so a counter
never goes down between two reads unless it was cleared.
"""

from __future__ import annotations

#: The origin of the time-driven growth of a clean port ([I]: a node "booted" in Nov 2023).
ORIGIN = 1_700_000_000.0

#: Counts a clean port gathered since boot and that no longer move (information only).
SINCE_BOOT = {
    "mac_rx_fcs_err_pkt_num": 3,
    "mac_rx_bad_pkt_num": 3,
    "roce_rx_err_pkt_num": 1,
    "roce_out_of_order_num": 2,
    "roce_new_pkt_rty_num": 5,
}

#: Growth per second of a clean port: some traffic, and a trickle of PFC frames.
CLEAN_RATES = {
    "mac_tx_total_pkt_num": 120.0,
    "mac_tx_total_oct_num": 120.0 * 256,
    "mac_rx_total_pkt_num": 120.0,
    "mac_rx_total_oct_num": 120.0 * 256,
    "mac_rx_pfc_pkt_num": 2.0,
    "mac_rx_pfc_pri3_pkt_num": 2.0,
    "roce_rx_all_pkt_num": 100.0,
    "roce_rx_rc_pkt_num": 100.0,
    "roce_tx_all_pkt_num": 100.0,
    "roce_tx_rc_pkt_num": 100.0,
    "roce_cqe_num": 50.0,
    "nic_tx_all_pkg_num": 20.0,
    "nic_tx_all_oct_num": 20.0 * 128,
    "nic_rx_all_pkg_num": 20.0,
    "nic_rx_all_oct_num": 20.0 * 128,
}

#: Lab faults that make counters grow: kind -> {counter: per second}.
FAULT_RATES = {
    "fcs-errors": {"mac_rx_fcs_err_pkt_num": 50.0},
    "pfc-storm": {"mac_rx_pfc_pkt_num": 20_000.0, "mac_rx_pfc_pri3_pkt_num": 20_000.0},
}


def _cumulative(doc: dict, devid: int, when: float) -> dict[str, int]:
    """Every time-driven counter of one port at ``when`` (since boot, not counting any clear)."""
    values = dict(SINCE_BOOT)
    elapsed = max(0.0, when - ORIGIN)
    for name, rate in CLEAN_RATES.items():
        values[name] = values.get(name, 0) + int(rate * elapsed)
    for fault in doc.get("faults", []):
        rates = FAULT_RATES.get(fault.get("kind", ""))
        if rates is None or fault.get("npu") not in (None, devid):
            continue
        since = float(fault.get("since", when))
        for name, rate in rates.items():
            values[name] = values.get(name, 0) + int(rate * max(0.0, when - since))
    return values


def counters_at(doc: dict, devid: int, now: float) -> dict[str, int]:
    """What ``-stat -g`` shows for ``devid`` at ``now``: time-driven counts plus counted events,
    from the last ``-stat -c`` on."""
    device = doc["devices"][devid]
    values = _cumulative(doc, devid, now)
    cleared = device.get("counters_cleared_at")
    if cleared is not None:
        before = _cumulative(doc, devid, float(cleared))
        values = {name: max(0, value - before.get(name, 0)) for name, value in values.items()}
    for name, amount in device.get("counters", {}).items():
        values[name] = values.get(name, 0) + int(amount)
    return values


def bank_growth(doc: dict, fault: dict, now: float) -> None:
    """Before ``fault`` is removed from ``doc``: move what it made its counters grow (since it
    began, or since the port's last ``-stat -c`` if later) into each affected device's counted
    events, so that the counters stop growing but do not fall."""
    rates = FAULT_RATES.get(fault.get("kind", ""))
    if rates is None:
        return
    for devid, device in enumerate(doc["devices"]):
        if fault.get("npu") not in (None, devid):
            continue
        start = float(fault.get("since", now))
        cleared = device.get("counters_cleared_at")
        if cleared is not None:
            start = max(start, float(cleared))
        counted = device.setdefault("counters", {})
        for name, rate in rates.items():
            counted[name] = int(counted.get(name, 0)) + int(rate * max(0.0, now - start))
