"""Python, torch, torch_npu and torchvision versions as one interpreter sees them.

Versions come from ``importlib.metadata`` (the installed distributions' metadata). The probe
never imports torch or torch_npu: importing torch_npu initialises the NPU driver, which is
slow, can hang on a sick device, and would make a read-only probe touch the hardware.
"""

from __future__ import annotations

import json
from typing import Dict, Optional, Tuple

from ascendprep.facts.model import PythonEnv
from ascendprep.facts.text import UnexpectedOutput, first_line

#: Reported name → distribution names to try (torch_npu's wheel has used both spellings).
PACKAGES: Dict[str, Tuple[str, ...]] = {
    "torch": ("torch",),
    "torch_npu": ("torch_npu", "torch-npu"),
    "torchvision": ("torchvision",),
}

#: Runs on the host's interpreter (Python 3.x; importlib.metadata needs 3.8) and prints one JSON line.
PROBE_CODE = f"""import json, sys
try:
    from importlib import metadata
except ImportError:
    metadata = None
def version(names):
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
out = {{"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "executable": sys.executable}}
if metadata is None:
    out["error"] = "importlib.metadata needs Python 3.8 or newer"
else:
    out["packages"] = dict((key, version(names)) for key, names in {json.dumps(PACKAGES)}.items())
print(json.dumps(out))
"""


def parse_python_probe(interpreter: str, stdout: str) -> Tuple[PythonEnv, Optional[str]]:
    """The interpreter's facts, and the problem it reported (an old Python) or None."""
    line = first_line(stdout, limit=10_000)
    try:
        document = json.loads(line)
    except ValueError:
        raise UnexpectedOutput(f"python probe printed {first_line(stdout)!r}, not JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("python"), str):
        raise UnexpectedOutput(f"python probe printed {first_line(stdout)!r}")
    raw_packages = document.get("packages") or {}
    if not isinstance(raw_packages, dict):
        raise UnexpectedOutput("python probe: 'packages' is not an object")
    packages = {name: (value if isinstance(value, str) else None) for name, value in raw_packages.items()}
    env = PythonEnv(
        interpreter=interpreter,
        python_version=document["python"],
        executable=document.get("executable") if isinstance(document.get("executable"), str) else None,
        packages=packages,
    )
    error = document.get("error")
    return env, (str(error) if error else None)
