"""PGxCorpus-style corpus construction pipeline (stage functions; Luigi lives in pipeline.tasks)."""

__version__ = "0.1.0"
