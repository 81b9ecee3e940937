"""The run manifest: the names of the build's versioned input files (pipeline/corpus/manifest.py).

Covers: pipeline.corpus.manifest
"""

from __future__ import annotations

import pytest

from pipeline.corpus.manifest import config_file_names


@pytest.mark.parametrize(("path", "named", "name"), [
    ("/p/config/schema.yaml", {"/p/config/schema.yaml": "schema"}, "schema"),
    ("/p/rosters/team.tsv", {"/p/rosters/team.tsv": "roster"}, "roster"),
    ("/p/.cache/lexicon/lexicon.json.gz", {}, "lexicon"),
    ("/p/config/brat/tools.conf", {}, "brat/tools.conf"),
    ("/p/config/filter.yaml", {}, "filter"),
])
def test_config_file_names(path: str, named: dict[str, str], name: str) -> None:
    assert config_file_names([path], named) == {name: path}
