# Managed by ascendprep: changes are overwritten by 'ascendprep apply'.
# Cluster-wide environment for Ascend training; sourced by set_env.sh.

# Locate CANN as the Ascend PyTorch guide does: the install record, else the default prefix.
CANN_INSTALL_PATH_CONF=/etc/Ascend/ascend_cann_install.info
if [ -f "$CANN_INSTALL_PATH_CONF" ]; then
  DEFAULT_CANN_INSTALL_PATH=$(grep Install_Path "$CANN_INSTALL_PATH_CONF" | cut -d "=" -f 2)
else
  DEFAULT_CANN_INSTALL_PATH=/usr/local/Ascend
fi
CANN_INSTALL_PATH=${ASCENDPREP_CANN_PATH:-$DEFAULT_CANN_INSTALL_PATH}
if [ -d "$CANN_INSTALL_PATH/ascend-toolkit/latest" ] && [ -f "$CANN_INSTALL_PATH/ascend-toolkit/set_env.sh" ]; then
  . "$CANN_INSTALL_PATH/ascend-toolkit/set_env.sh"
elif [ -f "$CANN_INSTALL_PATH/nnae/set_env.sh" ]; then
  . "$CANN_INSTALL_PATH/nnae/set_env.sh"
else
  echo "ascendprep env.sh: no CANN set_env.sh under $CANN_INSTALL_PATH" >&2
fi

export HCCL_WHITELIST_DISABLE=1
export HCCL_CONNECT_TIMEOUT=1200
export ASCEND_SLOG_PRINT_TO_STDOUT=0
export ASCEND_GLOBAL_LOG_LEVEL=3
export ASCEND_GLOBAL_EVENT_ENABLE=0
export HCCL_OP_EXPANSION_MODE=AI_CPU
export HCCL_OP_RETRY_ENABLE=L1:1,L2:1
