"""The import layers of `pipeline/`: one ordered stack, as data.

[`LAYERS`][pipeline.layers.LAYERS] lists the units of the package from the bottom of the stack to the
top. A unit is a top-level module (``store``, ``tasks``) or a subpackage (``brat``, ``campaign``); the
package's own ``__init__`` is the unit ``__init__``. A module may import a module of its own unit or of
a unit *below* its own, never one above; and no two modules, nor two units, may import each other, even
through others (the module import graph and the unit import graph have no cycle).

The checker is a test helper, ``tests/layers_check.py``: it reads every module with `ast` (no import is
executed), so it sees every ``import`` statement: module-level or inside a function, absolute or
relative, under ``if TYPE_CHECKING:`` too. `tests/test_layers.py` runs it on `pipeline/`; the
architecture page of the documentation draws the same stack.
"""

from __future__ import annotations

LAYERS: tuple[str, ...] = (
    # the foundation: plain modules, each knowing only the ones before it
    "__init__",  # the package version
    "layers",  # this stack
    "errors",  # the base class of bad-input errors, and whether a command has begun writing
    "paths",  # listing files without following symbolic links
    "resources",  # where the shipped config/ files and the user cache directory are
    "names",  # patterns of identifiers that become file names
    "yamlfile",  # checked reading of the YAML files
    "process_cache",  # loaded configuration, once per process and file content
    "documents",  # the document model
    "schema",  # the corpus schema (config/schema.yaml)
    "durable",  # durable files: replace, create once, append, lock, stage and publish a directory
    "store",  # the sharded gzip JSON Lines store
    "memo",  # per-document memos of a stage
    # the stages, by concern
    "sources",  # clients and readers of PubMed, PubTator, BioC
    "brat",  # the brat file format and what works on any brat collection
    "corpus",  # filtering, sampling, the brat export of a build, run manifests, the output directory
    "nlp",  # sentences, pre-annotation, alignment, extension, type mapping, models
    "campaign",  # the two-phase annotation campaign and the release
    "serve",  # serving a campaign with brat: the app, its policy, sessions, history, backups
    # the wiring
    "tasks",  # the Luigi tasks: every use of Luigi
    "cli",  # the pgx-corpus command
    "__main__",  # python -m pipeline
)
"""The units of `pipeline/`, from the bottom of the stack to the top."""
