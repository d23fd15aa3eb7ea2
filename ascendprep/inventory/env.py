"""Which variables an inventory's ``env:`` may export.

env.sh is sourced (through set_env.sh) by every training shell and by verify's own probes, as
the SSH user (root by default): the launch shell, ``import torch_npu`` and the all-reduce's
torchrun. A variable there reaches every program those shells start. As sysctl.py does for
kernel keys: the shapes HCCL, CANN and torch_npu read are allowed, anything else needs the
inventory's ``env_opt_in``, and variables that make a shell, the dynamic loader or an
interpreter run other code are refused outright.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Optional

#: Families HCCL, CANN and torch_npu read (docs/ascend-reference.md §5.2, docs/a3-superpod.md §3,
#: and ``HCOMM_`` for the Ascend 950's communication layer, docs/ascend950.md): allowed without more.
ENV_ALLOWED_PREFIXES = ("HCCL_", "ASCEND_", "TORCH_", "NPU_", "PYTORCH_NPU_", "HCOMM_")

#: Variables outside those families that the reference names for Ascend training: the rendezvous
#: (torchrun), the rank table and its companions (docs/ascend-reference.md §6), ModelZoo's env_npu.sh
#: (docs/ascend-reference.md §5.2), and the host
#: NIC of gloo and NCCL (set_env.sh binds them).
ENV_REFERENCED = frozenset(
    {
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "NNODES",
        "NODE_RANK",
        "NPROC_PER_NODE",
        "RANK_TABLE_FILE",
        "RANK_ID",
        "RANK_SIZE",
        "DEVICE_ID",
        "MINDSPORE_HCCL_CONFIG_PATH",
        "TASK_QUEUE_ENABLE",
        "COMBINED_ENABLE",
        "GLOO_SOCKET_IFNAME",
        "NCCL_SOCKET_IFNAME",
        "OMP_NUM_THREADS",
    }
)

#: Within the allowed families, where CANN loads its own code from (docs/ascend-reference.md §5.1: CANN's set_env.sh, which
#: env.sh sources first, exports them). Another value makes every shell that sources env.sh, root's
#: probes included, load operators and kernels from elsewhere: an opt-in, not a default.
ENV_CODE_LOCATIONS = frozenset(
    {"ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "ASCEND_CUSTOM_OPP_PATH"}
)

_LOADER = "makes the dynamic loader load other code into every program started after env.sh (root's probes included)"
_SHELL = "makes the shell that sources env.sh run other code or other programs"
_GLIBC = "makes glibc load other modules or files (glibc ignores it in set-uid programs for that reason)"
_PYTHON = "makes Python import other code (verify imports torch_npu under env.sh, as root by default)"

#: Prefixes never exported, not even with opt-in, and why.
ENV_DENIED_PREFIXES: dict[str, str] = {
    "LD_": _LOADER,
    "PYTHON": _PYTHON,
    "ASCENDPREP_": "is ascendprep's own control, not the job's",
}

#: Variables never exported, not even with opt-in, and why: the shell's own hooks and search path,
#: glibc's list of variables it ignores in set-uid programs because they load code or files
#: (``UNSECURE_ENVVARS``), and interpreters' and libraries' module paths.
ENV_DENIED: dict[str, str] = {
    **{
        name: _SHELL
        for name in (
            "PATH",
            "BASH_ENV",
            "ENV",
            "SHELLOPTS",
            "BASHOPTS",
            "PS4",
            "PROMPT_COMMAND",
            "IFS",
            "CDPATH",
            "GLOBIGNORE",
        )
    },
    "HOME": "moves the home of the user verify's probes run as (root by default): its profile and Python's user site-packages, whose code they import",
    **{
        name: _GLIBC
        for name in (
            "GCONV_PATH",
            "GETCONF_DIR",
            "HOSTALIASES",
            "LOCALDOMAIN",
            "LOCPATH",
            "MALLOC_TRACE",
            "NIS_PATH",
            "NLSPATH",
            "RESOLV_HOST_CONF",
            "RES_OPTIONS",
            "TMPDIR",
            "TZDIR",
        )
    },
    **{
        name: "makes OpenSSL load other engines and providers (code)"
        for name in ("OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES")
    },
    **{
        name: "makes another interpreter load other code"
        for name in ("PERL5LIB", "PERLLIB", "PERL5OPT", "RUBYLIB", "RUBYOPT", "NODE_OPTIONS", "LESSOPEN", "LESSCLOSE")
    },
}


def env_denied(name: str) -> Optional[str]:
    """Why ``name`` is never exported, or None."""
    if name in ENV_DENIED:
        return ENV_DENIED[name]
    return next((why for prefix, why in ENV_DENIED_PREFIXES.items() if name.startswith(prefix)), None)


def is_allowed_variable(name: str) -> bool:
    """True for variables an inventory may export without opting in."""
    if name in ENV_CODE_LOCATIONS or env_denied(name) is not None:
        return False
    return name.startswith(ENV_ALLOWED_PREFIXES) or name in ENV_REFERENCED


def variable_problem(name: str, opt_in: Iterable[str]) -> Optional[str]:
    """Why the inventory's ``env:`` may not export ``name``, or None."""
    denied = env_denied(name)
    if denied is not None:
        return f"{name} {denied}; ascendprep never exports it, not even with env_opt_in"
    if is_allowed_variable(name) or name in set(opt_in):
        return None
    if name in ENV_CODE_LOCATIONS:
        return f"{name} says where CANN loads its code from (CANN's set_env.sh sets it); to override it, list it under env_opt_in"
    families = ", ".join(prefix + "*" for prefix in ENV_ALLOWED_PREFIXES)
    return f"{name} is not a variable HCCL, CANN or torch_npu reads ({families}, MASTER_ADDR, …); to export it anyway, list it under env_opt_in"


def env_opt_in_problem(name: str, env: Mapping[str, str]) -> Optional[str]:
    """An opt-in entry must name a variable the inventory exports, outside the allowed shapes."""
    denied = env_denied(name)
    if denied is not None:
        return f"{name} {denied}; it cannot be opted in"
    if name not in env:
        return f"{name} is opted in but not set under env"
    if is_allowed_variable(name):
        return f"{name} is allowed without opt-in; remove it from env_opt_in"
    return None
