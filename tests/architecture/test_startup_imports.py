"""What a command imports before it does anything: every `hudi-table-service` command (and the scale
benchmark's figures, which time whole commands) pays it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_line_imports_no_pandas() -> None:
    """pandas is a tenth of a second of imports that no command needs: pyarrow loads it when a module
    makes an Arrow scalar at import time (`strategies.execution.sort_and_size` did)."""
    code = "import sys; from service.cli import build_parser; build_parser(); print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"
