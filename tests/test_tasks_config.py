"""The project's luigi.cfg as Luigi reads it: every option is consumed, without a warning on each build.

Covers: pipeline.tasks.params
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Instantiates Luigi's [core] config class, as every build does, with UnconsumedParameterWarning an error.
CHECK = """
import warnings
from luigi.parameter import UnconsumedParameterWarning
warnings.simplefilter("error", UnconsumedParameterWarning)
{imports}
import luigi.interface
luigi.interface.core()
from luigi.configuration import get_config
# the reads of luigi.rpc.RemoteScheduler, with its defaults
print(get_config().getint("core", "rpc-retry-attempts", 3), get_config().getint("core", "rpc-retry-wait", 30))
"""


def run_check(imports: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHECK.format(imports=imports)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg"), "PATH": ""})


def test_rpc_retry_options_are_read_and_do_not_warn() -> None:
    """The scheduler client reads [core] rpc_retry_*; pipeline.tasks silences Luigi's false unconsumed warning."""
    done = run_check("import pipeline.tasks")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "1"]  # luigi.cfg's values, not Luigi's defaults (3 tries, 30 s)
    # the warning is Luigi's own: without the project's filter it is raised
    bare = run_check("")
    assert bare.returncode != 0 and "rpc_retry_attempts" in bare.stderr
