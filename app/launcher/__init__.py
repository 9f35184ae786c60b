"""The ``contextsynth`` command of an installed distribution.

The service's code is the package ``app``, as this repository lays it out. A wheel
that put ``app`` at the top of site-packages would clash with the many other projects
whose package is called ``app``, so the wheel installs this module as the top-level
package ``contextsynth`` and the service's ``app`` inside it (see setup.py). Only the
service's own process, and the processes it starts, put that folder on their path.

From a checkout (an editable install, or ``python -m app.cli``) ``app`` is importable
as it is, and nothing is added.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _bundled() -> Path | None:
    """The folder holding the wheel's ``app``, when this is an installed wheel."""
    here = Path(__file__).resolve().parent
    return here if (here / "app" / "__init__.py").is_file() else None


def main() -> int:
    folder = _bundled()
    if folder is not None and str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
        # Uvicorn's workers and `bench --replay` start Python processes of their own.
        inherited = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = (str(folder) if not inherited
                                    else os.pathsep.join((str(folder), inherited)))
    from app.cli import main as run

    return run()
