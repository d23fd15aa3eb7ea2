#!/usr/bin/env bash
# Capture what README.md's walkthrough shows: a small inventory and the actual output of
# `ascendprep plan`, `apply` and `verify` against a 2-node lab, written to docs/output/.
# tests/packaging/test_docs.py holds the README's quoted blocks equal to these files: after a
# change to what the commands print, run this as root (it brings a lab up); with the default OUT
# it also puts the new blocks into README.md (scripts/quote_output_in_readme.py). Settings: PYTHON
# (default: .venv/bin/python of this checkout, else the interpreter of the `ascendprep` on PATH),
# LAB (default readme), OUT (default docs/output).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
if [ ! -x "$PYTHON" ]; then
  PYTHON=$(head -n 1 "$(readlink -f "$(command -v ascendprep)")" | sed 's/^#! *//')
fi
LAB=${LAB:-readme}
OUT=${OUT:-$REPO/docs/output}
# The checkout's package, whichever ascendprep is on PATH; tables as wide as a code host shows.
ascendprep() { PYTHONPATH=$REPO "$PYTHON" -m ascendprep "$@"; }
export COLUMNS=100 NO_COLOR=1

if [ "$(id -u)" -ne 0 ]; then
  echo "capture-readme-output: run as root (the lab needs network namespaces)" >&2
  exit 2
fi
work=$(mktemp -d)
cleanup() { status=$?; ascendprep lab down --name "$LAB" >/dev/null || status=1; rm -rf "$work"; exit "$status"; }
trap cleanup EXIT

NODES=2
lab_inventory=$(ascendprep lab up --name "$LAB" --nodes "$NODES" --product atlas-a2 | tail -n 1)
labdir=$(dirname "$lab_inventory")
# A hand-written inventory, as for a real cluster: only what differs from the defaults.
"$PYTHON" - "$lab_inventory" "$labdir/cluster.yaml" <<'EOF'
import sys, yaml
lab = yaml.safe_load(open(sys.argv[1]))
node = lab["nodes"][0]
sw = lab["software"]
text = f"""name: a2-lab
product: {lab['product']}
device_network:
  subnet: {lab['device_network']['subnet']}   # where the NPUs' device IPs come from
ssh:
  key: {lab['ssh']['key']}   # paths relative to this file
  known_hosts: {lab['ssh']['known_hosts']}
nodes:
  - {{name: "{node['name']}", host: "{node['host']}"}}
firewall: leave
software:
  cann: "{sw['cann']}"
  driver: "{sw['driver']}"
  torch: "{sw['torch']}"
  torch_npu: "{sw['torch_npu']}"
  python_path: {sw['python_path']}
"""
open(sys.argv[2], "w").write(text)
EOF
mkdir -p "$OUT"
cp "$labdir/cluster.yaml" "$OUT/inventory.yaml"

lab_diagnostics() {  # what a reader needs when a node did not answer: the lab's view and sshd's own log
  ascendprep lab status --name "$LAB" || true
  for log in /run/ascendprep-lab/"$LAB"/nodes/*/sshd.log; do
    [ -f "$log" ] && { echo "== $log (last lines)"; tail -n 20 "$log"; }
  done
}
# The capture starts from a lab whose every node takes a login, so that what it records is what the
# commands print, not a node still starting; a node that never does stops the capture, explained.
for node in $(seq -f 'node%g' 1 "$NODES"); do
  for try in $(seq 1 40); do
    ascendprep lab ssh --name "$LAB" "$node" true >/dev/null 2>&1 && break
    if [ "$try" -eq 40 ]; then
      echo "capture-readme-output: $node takes no SSH login after 20 s" >&2
      lab_diagnostics >&2
      exit 1
    fi
    sleep 0.5
  done
done

run() {  # run NAME COMMAND...: its output (stdout and stderr) and exit code into docs/output/NAME.txt
  local name=$1; shift
  local rc=0
  (cd "$work" && ascendprep "$@") >"$work/$name.out" 2>&1 || rc=$?
  { echo "\$ ascendprep $*"; cat "$work/$name.out"; echo "[exit $rc]"; } | sed "s#$labdir/##g; s#$work/##g" >"$OUT/$name.txt"
  echo "== $name: exit $rc"
}
inventory=$labdir/cluster.yaml
run plan plan "$inventory"
if grep -q "not in this plan\|connection refused\|timed out in connect" "$OUT/plan.txt"; then
  echo "capture-readme-output: plan could not read every node; the capture would not show what users see" >&2
  cat "$OUT/plan.txt" >&2
  lab_diagnostics >&2
  exit 1
fi
run apply apply
run verify verify "$inventory"
# The README quotes these files: put the new ones in (only for the checkout's own docs/output).
if [ "$OUT" = "$REPO/docs/output" ]; then
  "$PYTHON" "$REPO/scripts/quote_output_in_readme.py"
fi
