#!/bin/bash
# ascendprep node check for Slurm: run the node-local verify on this node and drain the node,
# with the failing checks as the reason, when it finds an error.
#
# Use it as any of (slurm.conf, the same on every node):
#   HealthCheckProgram=/usr/local/sbin/ascendprep-nodecheck.sh   (every HealthCheckInterval s)
#   Prolog=/usr/local/sbin/ascendprep-nodecheck.sh               (before each job; a failure requeues it)
#   Epilog=/usr/local/sbin/ascendprep-nodecheck.sh               (after each job)
#
# The conventions are LBNL NHC's: a node this script drained carries a reason starting with
# "ascendprep:", and only such a node is resumed when the check passes again; a reason an
# operator set is never touched. Only a failed check of error severity drains: verify's exit 1
# with its JSON report naming such a check. Anything else is logged and drains nothing, so that a
# broken config or install cannot drain the whole cluster: an inventory or setup problem (exit 2),
# a crash or a usage error (no report), a result verify could not write (exit 1, a report without
# a failed error check, e.g. a missing --prometheus-file folder).
#
# Settings: environment, or /etc/default/ascendprep-nodecheck (sourced when present):
#   ASCENDPREP_INVENTORY  the cluster inventory (default /etc/ascendprep/inventory.yaml)
#   ASCENDPREP            the ascendprep command (default: ascendprep on PATH)
#   ASCENDPREP_NODE       this node's inventory name (default: verify --local matches it by host name)
#   ASCENDPREP_TIMEOUT    seconds verify may take (default 120; Slurm's PrologEpilogTimeout must be longer)
#   ASCENDPREP_TEXTFILE   also write Prometheus metrics here (node_exporter textfile collector), e.g.
#                         /var/lib/node_exporter/textfile/ascendprep.prom; empty: none
#   ASCENDPREP_BUNDLE_DIR keep the node bundle here (for verify --from-bundle); empty: none
#   ASCENDPREP_DRAIN      1 (default): drain on failure; 0: only report (exit status)
#   SCONTROL              scontrol to call (default: scontrol on PATH)
# Exit status: 0 passed (or nothing to judge), 1 a check of error severity failed (the node was
# drained, unless ASCENDPREP_DRAIN=0), so that a prolog failure requeues the job; a prolog's exit
# 1 also drains the node in Slurm itself, hence 0 for everything that is not a failed check.
# verify's output is kept in a folder of its own (mktemp -d, 0700), removed on exit.
set -u
CONFIG=${ASCENDPREP_NODECHECK_CONFIG:-/etc/default/ascendprep-nodecheck}
# shellcheck source=/dev/null
[ -r "$CONFIG" ] && . "$CONFIG"

INVENTORY=${ASCENDPREP_INVENTORY:-/etc/ascendprep/inventory.yaml}
ASCENDPREP=${ASCENDPREP:-ascendprep}
TIMEOUT=${ASCENDPREP_TIMEOUT:-120}
DRAIN=${ASCENDPREP_DRAIN:-1}
SCONTROL=${SCONTROL:-scontrol}
TAG="ascendprep:"
# Slurm sets SLURMD_NODENAME for prologs/epilogs and health checks; else the short host name.
SLURM_NODE=${SLURMD_NODENAME:-$(hostname -s)}

log() { logger -t ascendprep-nodecheck -- "$*" 2>/dev/null || true; echo "ascendprep-nodecheck: $*" >&2; }

# A private folder: no name in a shared TMPDIR that someone could plant a link at is ever opened.
work=$(mktemp -d "${TMPDIR:-/tmp}/ascendprep-nodecheck.XXXXXX") || { log "cannot make a temp folder"; exit 0; }
trap 'rm -rf -- "$work"' EXIT
report=$work/report.json

args=(verify "$INVENTORY" --local --format json --timeout "$TIMEOUT")
[ -n "${ASCENDPREP_NODE:-}" ] && args+=(--node "$ASCENDPREP_NODE")
[ -n "${ASCENDPREP_TEXTFILE:-}" ] && args+=(--prometheus-file "$ASCENDPREP_TEXTFILE")
[ -n "${ASCENDPREP_BUNDLE_DIR:-}" ] && args+=(--bundle-dir "$ASCENDPREP_BUNDLE_DIR")

"$ASCENDPREP" "${args[@]}" >"$report" 2>"$work/stderr"
status=$?
errors=$(cat "$work/stderr" 2>/dev/null)

# The failed checks at error severity, by id (the JSON report's findings), as one line: exit 0.
# Exit 1: the report is verify's but names no such check; 2: there is no verify report.
failed_checks() {
  python3 - "$report" <<'PY' 2>/dev/null
import json, sys
try:
    with open(sys.argv[1], encoding="utf-8") as handle:
        document = json.load(handle)
except (OSError, ValueError, RecursionError):
    sys.exit(2)
if not isinstance(document, dict) or document.get("kind") != "verify" or not isinstance(document.get("findings"), list):
    sys.exit(2)
ids = []
for f in document["findings"]:
    if not isinstance(f, dict) or f.get("severity") != "error":
        continue
    label = str(f.get("id")) + (f"[npu {f['npu']}]" if isinstance(f.get("npu"), int) else "")
    if label not in ids:
        ids.append(label)
if not ids:
    sys.exit(1)
text = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
print("".join(c for c in text if c.isprintable() and c not in "\"'\\")[:180] or "verify failed")
PY
}

current_reason() {
  "$SCONTROL" show node "$SLURM_NODE" 2>/dev/null | sed -n 's/^ *Reason=\(.*\) \[.*$/\1/p; s/^ *Reason=\(.*\)$/\1/p' | head -n 1
}

case $status in
  0)
    # Passed: resume the node only when it was this script that drained it.
    if [ "$DRAIN" = 1 ]; then
      case "$(current_reason)" in
        "$TAG"*) log "checks pass again: resuming $SLURM_NODE"; "$SCONTROL" update NodeName="$SLURM_NODE" State=RESUME ;;
      esac
    fi
    exit 0 ;;
  1)
    checks=$(failed_checks)
    judged=$?
    case $judged in
      0) ;;
      1) log "verify exited 1 but its report names no failed check of error severity, nothing drained: ${errors:0:400}"; exit 0 ;;
      2) log "verify exited 1 and printed no verify report (a crash or a usage error?), nothing drained: ${errors:0:400}"; exit 0 ;;
      *) log "verify exited 1 and its report could not be read (python3: exit $judged), nothing drained: ${errors:0:400}"; exit 0 ;;
    esac
    why="$TAG $checks"
    log "$SLURM_NODE failed: $why"
    if [ "$DRAIN" = 1 ]; then
      "$SCONTROL" update NodeName="$SLURM_NODE" State=DRAIN Reason="$why" || log "scontrol could not drain $SLURM_NODE"
    fi
    exit 1 ;;
  *)
    log "verify could not run (exit $status), nothing drained: ${errors:0:400}"
    exit 0 ;;
esac
