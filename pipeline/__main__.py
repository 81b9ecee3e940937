"""``python -m pipeline`` is the ``pgx-corpus`` command."""

from pipeline.cli import console_main

raise SystemExit(console_main())
