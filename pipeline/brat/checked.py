"""The one input check of every brat command: read a collection, report its problems, keep the sound documents.

:func:`load_checked` reads every ``NAME.txt``/``NAME.ann`` under a directory
(as :func:`~pipeline.brat.standoff.read_directory` does) and checks each
document with the configuration-free checks of :mod:`pipeline.brat.validate`:

* the ``.txt`` exists (an ``.ann`` without it is an orphan), unless
  ``reference_texts`` holds the text of a document of that name (an
  annotation-only directory scored against a collection that has the texts);
  with ``textless=True`` (scoring commands: PharmaCoNER-style collections
  have no texts at all) an orphan without any text is kept, and reported as
  not checkable, instead of being excluded;
* both files are UTF-8 (a problem names the file and line of the bad bytes);
* every ``.ann`` line parses;
* every text-bound's offsets lie within the text, its fragments do not
  overlap, and its text column matches the text at its offsets.

A document with a missing text, non-UTF-8 bytes or a bad span is *broken*:
it is left out of :attr:`CheckedCollection.documents` and listed in
``excluded``.  An unparsable line is reported and skipped (the parser drops
it; the rest of the document is sound and kept).  Every
problem is a :class:`~pipeline.brat.validate.Problem` (``file:line: message``,
line 0 = the file as a whole).  Duplicate document names in subdirectories
are reported (the first, by path, is kept), as ``read_directory`` does.

:func:`filtered_copy` writes the sound documents of several collections to
a scratch directory, so a command whose computation reads directories sees
only them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.brat.standoff import BratDocument, BratTextError, read_directory, read_text
from pipeline.brat.validate import Problem, _textbound_problems
from pipeline.paths import list_files


@dataclass
class CheckedCollection:
    """A checked brat directory: the sound ``documents``, every ``problem``, the ``excluded`` names (sorted)."""

    directory: Path
    documents: list[BratDocument] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    orphans_with_reference: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.documents) + len(self.excluded)

    def summary(self) -> str:
        """``DIR: excluded N of M document(s) with problems`` (or that none was)."""
        unchecked = (f"; {len(self.unchecked)} without any text kept, their offsets unchecked"
                     if self.unchecked else "")
        if not self.excluded:
            return f"{self.directory}: {self.total} document(s) checked, none excluded{unchecked}"
        return (f"{self.directory}: excluded {len(self.excluded)} of {self.total} document(s) with problems "
                f"({', '.join(self.excluded[:10])}{' ...' if len(self.excluded) > 10 else ''}){unchecked}")


def collect_texts(directories: Iterable[str | Path]) -> dict[str, str]:
    """Name -> text of every readable UTF-8 ``.txt`` under ``directories`` (the first by path wins)."""
    texts: dict[str, str] = {}
    for directory in directories:
        for txt in list_files(directory, (".txt",), recursive=True).files:  # symlinks: reported by validate
            if txt.stem in texts:
                continue
            try:
                texts[txt.stem] = read_text(txt)
            except (OSError, BratTextError):
                continue  # reported when its own directory is checked
    return texts


def load_checked(directory: str | Path, reference_texts: Mapping[str, str] | None = None, *, textless: bool = False
                 ) -> CheckedCollection:
    """Read and check the brat documents under ``directory`` (see the module docstring).

    ``reference_texts`` (name -> text, e.g. from :func:`collect_texts` of the
    other directories of the command) lets an ``.ann`` without its ``.txt``
    be checked against, and carry, that text.  Offsets are character offsets
    into the ``.txt`` (half-open, document-relative).  Raises
    FileNotFoundError when ``directory`` is not a directory.
    """
    root = Path(directory)
    docs, issues = read_directory(root)
    result = CheckedCollection(root)
    by_file: dict[str, list[Problem]] = {}
    for issue in issues:
        by_file.setdefault(issue.file, []).append(Problem(issue.file, issue.line, issue.message))
    attributed: set[str] = set()
    for doc in docs:
        ann = Path(doc.path)
        txt = ann.with_suffix(".txt")
        found: list[Problem] = []
        for path in (str(txt), str(ann)):
            found += by_file.get(path, [])
            attributed.add(path)
        text = doc.text
        check_spans = True
        if not txt.exists():
            if reference_texts is not None and doc.name in reference_texts:
                text = doc.text = reference_texts[doc.name]
                result.orphans_with_reference.append(doc.name)
            elif textless:
                result.unchecked.append(doc.name)
                result.problems.append(Problem(str(ann), 0, f"no text file {txt.name} here or in the other "
                                                            "directories: offsets not checked (kept)"))
                check_spans = False
            else:
                found.append(Problem(str(ann), 0, f"no text file {txt.name} for this annotation file"))
                check_spans = False
        if check_spans and ann.exists() and not any(p.file == str(ann) and "UTF-8" in p.message for p in found):
            raw_lines = read_text(ann).split("\n")
            for t in doc.textbounds:
                found += _textbound_problems(t, text, raw_lines, str(ann))
        if any(not p.message.startswith("cannot parse line") for p in found):
            result.excluded.append(doc.name)
            result.problems += found
        elif found:  # only unparsable lines, skipped: the document is kept
            result.problems += found
            result.documents.append(doc)
        else:
            result.documents.append(doc)
    # problems of files that are no document of the result (duplicate names)
    result.problems += [p for path, ps in by_file.items() if path not in attributed for p in ps]
    result.problems = sorted(set(result.problems))
    result.excluded.sort()
    return result


def load_all_checked(directories: Sequence[str | Path], *, share_texts: bool = True, textless: bool = False
                     ) -> list[CheckedCollection]:
    """:func:`load_checked` of each directory; with ``share_texts`` an orphan ``.ann`` may take its text
    from another of the ``directories``; with ``textless`` (scoring) it is kept unchecked when none has it."""
    texts = collect_texts(directories) if share_texts else None
    return [load_checked(d, texts, textless=textless) for d in directories]


def filtered_copy(collections: Sequence[CheckedCollection], scratch: Path) -> list[Path]:
    """Copies of the collections holding only their sound documents, under ``scratch/0``, ``scratch/1``...

    Relative paths, ``.txt``/``.ann`` pairs (an orphan ``.ann`` checked
    against a reference text stays ``.ann`` only) and ``*.conf`` files are
    kept.  Returns the copies' directories, in order.
    """
    out: list[Path] = []
    for index, collection in enumerate(collections):
        target = scratch / str(index)
        target.mkdir(parents=True, exist_ok=True)
        for conf in list_files(collection.directory, (".conf",), recursive=True).files:  # links: not copied
            dest = target / conf.relative_to(collection.directory)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(conf, dest)
        for doc in collection.documents:
            ann = Path(doc.path)
            for path in (ann.with_suffix(".txt"), ann):
                if path.exists():
                    dest = target / path.relative_to(collection.directory)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, dest)
        out.append(target)
    return out


__all__ = ["CheckedCollection", "collect_texts", "filtered_copy", "load_all_checked", "load_checked"]
