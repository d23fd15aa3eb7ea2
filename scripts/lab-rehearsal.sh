#!/usr/bin/env bash
# The whole job on a virtual cluster: set up this machine, bring a lab up, then
#   plan -> apply -> verify names an injected grey failure -> verify --allreduce
# exactly as against real servers, over real SSH. The lab is taken down at the end unless
# KEEP_LAB=1. Options: NODES (default 4), PRODUCT (default atlas-a2), LAB (default rehearsal),
# SKIP_SETUP=1 (already set up), ASCENDPREP_VENV (the virtualenv scripts/setup.sh made).
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES:-4}
PRODUCT=${PRODUCT:-atlas-a2}
LAB=${LAB:-rehearsal}
WORKDIR=${WORKDIR:-$PWD/.ascendprep-rehearsal}

if [ "${SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
fi
# The virtualenv's own entry point: whatever else is on PATH (another Python's ascendprep, a
# pyenv shim) is not what setup.sh installed.
VENV=${ASCENDPREP_VENV:-$PWD/.venv}
if [ ! -x "$VENV/bin/ascendprep" ]; then
  echo "lab-rehearsal: $VENV/bin/ascendprep is missing: run scripts/setup.sh first (or unset SKIP_SETUP)" >&2
  exit 2
fi
ascendprep() { "$VENV/bin/ascendprep" "$@"; }

cleanup() {
  status=$?
  if [ "${KEEP_LAB:-0}" = 1 ]; then
    echo "== lab '$LAB' kept (take it down with: ascendprep lab down --name $LAB)"
  else
    echo "== lab down"
    if ! ascendprep lab down --name "$LAB"; then
      echo "lab down failed: see the message above" >&2
      status=1
    fi
  fi
  exit "$status"
}
trap cleanup EXIT

echo "== lab up: $NODES simulated $PRODUCT nodes"
inventory=$(ascendprep lab up --name "$LAB" --nodes "$NODES" --product "$PRODUCT" | tail -n 1)
echo "inventory: $inventory"

mkdir -p "$WORKDIR"
cd "$WORKDIR"

echo "== plan"
ascendprep plan "$inventory"

echo "== apply"
ascendprep apply

echo "== plan again (nothing left to do)"
ascendprep plan "$inventory" --detailed-exitcode

echo "== a grey failure: FCS errors growing on node2's NPU 1 port (verify must name it, exit 1)"
ascendprep lab fault node2 fcs-errors --npu 1 --name "$LAB"
grey_rc=0
ascendprep verify "$inventory" --only network.counters --format json >grey.json || grey_rc=$?
ascendprep lab heal node2 --name "$LAB"
if [ "$grey_rc" -ne 1 ] || ! grep -q '"subject": "mac_rx_fcs_err_pkt_num"' grey.json; then
  echo "lab-rehearsal: verify did not name the FCS errors of node2's NPU 1 (exit $grey_rc; see $WORKDIR/grey.json)" >&2
  exit 1
fi
echo "named: node2 NPU 1 mac_rx_fcs_err_pkt_num (see $WORKDIR/grey.json)"

echo "== verify --allreduce"
# Two ranks per node: every lab rank is a CPU torch process on this one machine.
ascendprep verify "$inventory" --allreduce --nproc-per-node 2
