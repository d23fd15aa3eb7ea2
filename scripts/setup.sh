#!/usr/bin/env bash
# Install what ascendprep, its lab and its tests need on a Debian/Ubuntu machine (as root):
#   - Debian packages: OpenSSH (the lab's nodes run a real sshd), iproute2 (namespaces, veth, tc),
#     python3-venv (the distribution's Python refuses pip installs: PEP 668);
#   - a virtualenv (default: .venv in this checkout) holding the package in editable mode with its
#     test extras and a CPU build of torch (the all-reduce runs for real with gloo);
#   - an `ascendprep` launcher on PATH: a symlink in /usr/local/bin to the venv's entry point.
# Nothing is installed into the system Python, and no --break-system-packages.
#
# Settings (environment): ASCENDPREP_VENV (where the venv goes), ASCENDPREP_PYTHON (the
# interpreter that creates it, default: python3 on PATH), ASCENDPREP_BIN_DIR (where the launcher
# goes, default /usr/local/bin; empty: no launcher), TORCH_SPEC (default torch==2.13.0).
# Remove everything it installed: rm -rf .venv /usr/local/bin/ascendprep
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${ASCENDPREP_VENV:-$PWD/.venv}
PYTHON=${ASCENDPREP_PYTHON:-python3}
BIN_DIR=${ASCENDPREP_BIN_DIR-/usr/local/bin}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}

if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/setup.sh: run as root (it installs Debian packages): sudo bash $0" >&2
  exit 2
fi
export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

echo "== system packages"
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  openssh-server openssh-client iproute2 procps psmisc util-linux kmod dash sudo \
  python3 python3-venv >/dev/null

if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "scripts/setup.sh: no '$PYTHON' on PATH (set ASCENDPREP_PYTHON to an interpreter >= 3.9)" >&2
  exit 2
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))'; then
  echo "scripts/setup.sh: $("$PYTHON" --version 2>&1) is too old: ascendprep needs Python >= 3.9" >&2
  exit 2
fi

echo "== virtualenv: $VENV (from $(command -v "$PYTHON"), $("$PYTHON" --version 2>&1))"
# A venv from another interpreter (or a broken one) is made anew rather than half reused.
if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi

echo "== python packages (into the virtualenv)"
"$VENV/bin/python" -m pip install -q "$TORCH_SPEC"
"$VENV/bin/python" -m pip install -q -e ".[test]"

if [ -n "$BIN_DIR" ]; then
  mkdir -p "$BIN_DIR"
  ln -sfn "$VENV/bin/ascendprep" "$BIN_DIR/ascendprep"
  echo "== launcher: $BIN_DIR/ascendprep -> $VENV/bin/ascendprep"
fi
echo "== ready: $("$VENV/bin/ascendprep" --version 2>/dev/null || echo ascendprep) in $VENV"
