"""Configuration loaded once per process and content.

Covers: pipeline.nlp.ontology, pipeline.process_cache
"""

from __future__ import annotations

from pathlib import Path

from pipeline.nlp.ontology import load_ontology
from pipeline.process_cache import loaded

ONTOLOGY = Path(__file__).resolve().parent.parent / "config" / "ontology.yaml"


def test_same_content_same_object_new_content_new_object(tmp_path: Path) -> None:
    copy = tmp_path / "ontology.yaml"
    copy.write_bytes(ONTOLOGY.read_bytes())
    first = loaded(load_ontology, copy)
    assert loaded(load_ontology, copy) is first
    assert loaded(load_ontology, ONTOLOGY).classes == first.classes  # same content, any path
    copy.write_text(ONTOLOGY.read_text(encoding="utf-8").replace("  DrugClass:", "  DrugClass:\n    priority: 0", 1),
                    encoding="utf-8")
    assert loaded(load_ontology, copy) is not first
