# Managed by ascendprep: changes are overwritten by 'ascendprep apply'.
# This node's part of the training job; source it before torchrun.

. /etc/ascendprep/env.sh
export MASTER_ADDR=10.0.0.11
export MASTER_PORT=29500
export NNODES=2
export NODE_RANK=0
export NPROC_PER_NODE=8
export HCCL_IF_IP=10.0.0.11
export RANK_TABLE_FILE=/etc/ascendprep/rank_table.json
