"""``python -m pipeline`` is the ``pgx-corpus`` command."""

from pipeline.cli import main

raise SystemExit(main())
