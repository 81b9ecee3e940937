"""Luigi tasks: the only package that knows about Luigi.

Every task is thin: it reads its input target, calls one stage function from the stage modules
(`pipeline/sources/`, `pipeline/nlp/`, `pipeline/corpus/`, [`pipeline.store`][pipeline.store],
[`pipeline.memo`][pipeline.memo]) and writes through ``temporary_path()`` so outputs appear atomically.
Output paths encode the significant parameters (a short hash of them, see
[`param_hash`][pipeline.tasks.params.param_hash]); operational knobs (e-mail, API key, batch sizes, workers) are
``significant=False`` and the API key is private.

Layout under ``--out OUT`` (see the reference's output layout):

    cache/efetch/ cache/pubtator/          raw responses, shared by every run
    searches/<query hash>/<date>.json       one ESearch record per query and day
    work/NN_<stage>/<param hash>/           shard-XXXXXX.jsonl.gz (+ .counts.json),
                                            counts.json and params.json of the stage
    runs/<param hash>/manifest.json         what a build did, for reproduction
    brat/                                   the published collection of the last build

Per-document stages are sharded by PMID block: a stage wrapper (``Sentences``, ``Preannotated``, ...)
lists the document shards and yields one task per shard, so ``--workers N`` runs shards in parallel; the
wrapper then sums the shard counts into the stage's ``counts.json``.

The package, from the bottom up:

- [`params`][pipeline.tasks.params]: the ``luigi.cfg`` sections, the parameter mixins of the stages,
  the parameter hashes that name output directories, and the build's configuration record;
- [`targets`][pipeline.tasks.targets]: directory targets and the lock of ``OUT`` under ``luigi --module``;
- [`sources`][pipeline.tasks.sources]: the PubMed search, the efetch download, the document shards;
- [`engine`][pipeline.tasks.engine]: the shard engine (``ShardTask``, ``StageWrapper``, ``Progress``,
  ``StepClock``);
- [`stages`][pipeline.tasks.stages]: one shard task and one wrapper per per-document stage, sampling,
  the brat export and the batches;
- [`build`][pipeline.tasks.build]: the root tasks ``BuildDocuments`` and ``BuildCorpus`` and the
  helpers of the process that runs them;
- [`run`][pipeline.tasks.run]: running them: Luigi's configuration, the central scheduler's client
  (``luigi.rpc.RemoteScheduler``), a build's ``luigi.build`` steps and the assistant worker of
  ``pgx-corpus worker``.

``pipeline.tasks`` itself exports [`BuildCorpus`][pipeline.tasks.build.BuildCorpus] for the command line
``luigi --module pipeline.tasks BuildCorpus ...``; importing it registers every task with Luigi.
"""

from pipeline.tasks.build import BuildCorpus

__all__ = ["BuildCorpus"]
