"""The build's configuration record: what a worker compares with what the build saw.

Covers: pipeline, pipeline.corpus.config_record, pipeline.store
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import __version__, store
from pipeline.corpus import config_record


def written(tmp_path: Path) -> tuple[Path, str, Path, Path]:
    """A build's record over one config file and one source file: (out, digest, config, source)."""
    config, source = tmp_path / "schema.yaml", tmp_path / "src" / "a.xml"
    source.parent.mkdir()
    config.write_text("types: []\n", encoding="utf-8")
    source.write_bytes(b"<x/>")
    record = config_record.make_record([str(config), str(config)], store.file_fingerprint([source.parent]), "m")
    out = tmp_path / "out"
    return out, config_record.write_record(out, record), config, source


def test_record_names_version_file_contents_sources_and_model(tmp_path: Path) -> None:
    out, digest, config, source = written(tmp_path)
    record = store.read_json(config_record.record_path(out, digest))
    assert record["version"] == __version__
    assert record["files"] == {str(config): store.content_digest(config)}
    assert record["sources"] == [[str(source), 4, source.stat().st_mtime_ns]]
    assert set(record["model"]) == {"m"}
    assert config_record.write_record(out, record) == digest  # same content, same name


def test_same_view_has_no_difference(tmp_path: Path) -> None:
    out, digest, config, source = written(tmp_path)
    sources = store.file_fingerprint([source.parent])
    assert config_record.differences(out, digest, [str(config)], sources=sources,
                                     data_inputs=[str(source.parent)], model="m") == []


@pytest.mark.parametrize(("change", "message"), [
    ("config", "schema.yaml: sha256"),
    ("source", "source file"),
    ("record", "not found"),
])
def test_a_difference_is_named(tmp_path: Path, change: str, message: str) -> None:
    out, digest, config, source = written(tmp_path)
    if change == "config":
        config.write_text("types: [Gene]\n", encoding="utf-8")
    elif change == "source":
        source.write_bytes(b"<xx/>")
    else:
        config_record.record_path(out, digest).unlink()
    problems = config_record.differences(out, digest, [str(config)], sources=store.file_fingerprint([source.parent]),
                                         data_inputs=[str(source.parent)])
    assert len(problems) == 1 and message in problems[0]


def test_sources_outside_the_tasks_data_inputs_are_not_compared(tmp_path: Path) -> None:
    out, digest, config, source = written(tmp_path)
    other = [str(tmp_path / "other")]
    assert config_record.differences(out, digest, [str(config)], sources=[], data_inputs=other) == []
