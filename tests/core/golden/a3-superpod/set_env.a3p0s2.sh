# Managed by ascendprep: changes are overwritten by 'ascendprep apply'.
# This node's part of the training job; source it before torchrun.

. /etc/ascendprep/env.sh
export MASTER_ADDR=10.50.0.11
export MASTER_PORT=29500
export NNODES=4
export NODE_RANK=1
export NPROC_PER_NODE=16
export HCCL_IF_IP=10.50.0.12
export RANK_TABLE_FILE=/etc/ascendprep/rank_table.json
# Host NIC for gloo and NCCL: the one holding this node's address 10.50.0.12, whatever the
# hostname resolves to (127.0.1.1 or nothing would make the ranks miss each other).
ascendprep_ifname=$(PATH="$PATH:/usr/sbin:/sbin" ip -o addr show 2>/dev/null | awk -v a=10.50.0.12 '{ split($4, p, "/"); if (p[1] == a) { sub(/@.*/, "", $2); print $2; exit } }')
if [ -n "$ascendprep_ifname" ]; then
  export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-$ascendprep_ifname}"
  export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-=$ascendprep_ifname}"
else
  echo 'ascendprep set_env.sh: no interface holds 10.50.0.12; GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME are not set' >&2
fi
unset ascendprep_ifname
