#!/usr/bin/env bash
# Install what ascendprep, its lab and its tests need on a Debian/Ubuntu machine (as root):
# OpenSSH (the lab's nodes run a real sshd), iproute2 (namespaces, veth, tc), and the Python
# package with its test extras and a CPU build of torch (the all-reduce runs for real with gloo).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/setup.sh: run as root (it installs Debian packages): sudo bash $0" >&2
  exit 2
fi
export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

echo "== system packages"
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  openssh-server openssh-client iproute2 procps psmisc util-linux kmod dash sudo >/dev/null

echo "== python packages"
python3 -m pip install -q "torch==2.13.0"
python3 -m pip install -q -e ".[test]"
