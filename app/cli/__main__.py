"""``python -m app.cli``: the same commands as ``contextsynth``."""

from app.cli import main

raise SystemExit(main())
