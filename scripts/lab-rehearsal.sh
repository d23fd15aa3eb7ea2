#!/usr/bin/env bash
# The whole job on a virtual cluster: set up this machine, bring a lab up, then
#   plan -> apply -> verify --allreduce, then grey faults (optics, port speed, FEC) that verify
#   must name, healed, and verify once more
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

echo "== verify --allreduce"
# Two ranks per node: every lab rank is a CPU torch process on this one machine.
ascendprep verify "$inventory" --allreduce --nproc-per-node 2

echo "== grey failures: a dim lane, LoS, a hot module, a 100G port, another FEC mode, FCS errors, a PFC storm, an unknown NPU event code (verify must name them)"
ascendprep lab fault node1 optical-low-power --npu 0 --name "$LAB"
ascendprep lab fault node1 optical-los --npu 1 --name "$LAB"
ascendprep lab fault node2 optical-hot --npu 0 --name "$LAB"
ascendprep lab fault node2 port-100g --npu 1 --name "$LAB"
ascendprep lab fault node1 fec-mismatch --npu 2 --name "$LAB"
ascendprep lab fault node2 optical-copper --npu 2 --name "$LAB"   # must not fail
ascendprep lab fault node1 fcs-errors --npu 3 --name "$LAB"
ascendprep lab fault node2 pfc-storm --npu 3 --name "$LAB"
ascendprep lab fault node2 npu-unknown-code --npu 0 --name "$LAB"
grey=0
ascendprep verify "$inventory" --only optics,ports,firmware,network.counters,npu.health || grey=$?
ascendprep lab heal --name "$LAB"
if [ "$grey" != 1 ]; then
  echo "lab-rehearsal: verify should have failed (exit 1) on the grey faults, got $grey" >&2
  exit 1
fi
echo "== verify after healing (grey checks pass)"
ascendprep verify "$inventory" --only optics,ports,firmware,network.counters,npu.health
