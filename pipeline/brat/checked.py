"""The one input check of every brat command: read a collection, report its problems, keep the sound documents.

[`load_checked`][pipeline.brat.checked.load_checked] reads every ``NAME.txt``/``NAME.ann`` under a directory
(as [`read_directory`][pipeline.brat.standoff.read_directory] does) and checks each
document with the configuration-free checks of [`pipeline.brat.validate`][pipeline.brat.validate]:

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
it is left out of ``CheckedCollection.documents`` and listed in
``excluded``.  An unparsable line is reported and skipped (the parser drops
it; the rest of the document is sound and kept).  Every
problem is a [`Problem`][pipeline.brat.validate.Problem] (``file:line: message``,
line 0 = the file as a whole).  Duplicate document names in subdirectories
are reported (the first, by path, is kept), as ``read_directory`` does.

[`filtered_copy`][pipeline.brat.checked.filtered_copy] writes the sound documents of several collections to
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
from pipeline.paths import list_files, resolve_collection


@dataclass
class CheckedCollection:
    """A checked brat directory: its sound documents, its problems and the names it excluded.

    Attributes:
        directory: The directory checked.
        documents: The sound documents (kept; offsets half-open into their text), in name order.
        problems: Every problem found, without duplicates, sorted by file, line and message.
        excluded: The names of the broken documents left out, sorted.
        orphans_with_reference: The names of the ``.ann`` files without ``.txt`` that were checked
            against, and carry, a reference text from another directory.
        unchecked: The names of the ``.ann`` files without any text kept with ``textless``, their
            offsets unchecked.
    """

    directory: Path
    documents: list[BratDocument] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    orphans_with_reference: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """The number of documents read: kept plus excluded."""
        return len(self.documents) + len(self.excluded)

    def summary(self) -> str:
        """Summarise the check in one line.

        Returns:
            ``DIR: excluded N of M document(s) with problems (names...)``, or
                ``DIR: M document(s) checked, none excluded``; followed by the count of documents kept
                unchecked, if any.
        """
        unchecked = (f"; {len(self.unchecked)} without any text kept, their offsets unchecked"
                     if self.unchecked else "")
        if not self.excluded:
            return f"{self.directory}: {self.total} document(s) checked, none excluded{unchecked}"
        return (f"{self.directory}: excluded {len(self.excluded)} of {self.total} document(s) with problems "
                f"({', '.join(self.excluded[:10])}{' ...' if len(self.excluded) > 10 else ''}){unchecked}")


def collect_texts(directories: Iterable[str | Path]) -> dict[str, str]:
    """Collect the texts of the documents of several directories, by name.

    A ``.txt`` that cannot be read or is not UTF-8 is skipped here (it is reported when its own
    directory is checked); symbolic links are not followed.

    Args:
        directories: The directories, searched recursively, in order of precedence.

    Returns:
        Document name (the ``.txt`` stem) -> its text, read as brat reads it; for a name found twice,
            the first directory's, then the first by path.
    """
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
    """Read and check the brat documents under a directory (see the module docstring).

    Offsets are character offsets into the ``.txt`` (half-open, document-relative).  Nothing is
    written.

    Args:
        directory: The brat directory, read recursively.
        reference_texts: Name -> text, e.g. from [`collect_texts`][pipeline.brat.checked.collect_texts]
            of the other directories of the command: lets an ``.ann`` without its ``.txt`` be checked
            against, and carry, that text.
        textless: Keep an ``.ann`` that has no text anywhere, unchecked and reported, instead of
            excluding it (scoring commands).

    Returns:
        The checked collection: the sound documents, the problems, the excluded names.

    Raises:
        FileNotFoundError: If ``directory`` is not a directory.
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
    """Read and check several brat directories with [`load_checked`][pipeline.brat.checked.load_checked].

    Args:
        directories: The directories, in the command's order.
        share_texts: Let an orphan ``.ann`` take its text from another of the ``directories``
            (the first that has it).
        textless: Keep an orphan ``.ann`` unchecked when none of them has its text (scoring).

    Returns:
        One checked collection per directory, in the order given.

    Raises:
        FileNotFoundError: If one of the ``directories`` is not a directory.
    """
    texts = collect_texts(directories) if share_texts else None
    return [load_checked(d, texts, textless=textless) for d in directories]


def filtered_copy(collections: Sequence[CheckedCollection], scratch: Path) -> list[Path]:
    """Copy the sound documents of checked collections into a scratch directory.

    Relative paths, ``.txt``/``.ann`` pairs (an orphan ``.ann`` checked
    against a reference text stays ``.ann`` only) and ``*.conf`` files are
    kept; symbolic links are not copied.  The originals are not touched.

    Args:
        collections: The checked collections.
        scratch: A directory owned by the caller; collection ``i`` is copied to ``scratch/i``
            (created; files already there are overwritten, not removed).

    Returns:
        The copies' directories, in the order of ``collections``.
    """
    out: list[Path] = []
    for index, collection in enumerate(collections):
        target = scratch / str(index)
        target.mkdir(parents=True, exist_ok=True)
        # the files were listed under the collection's target when it is a link (OUT/brat)
        root = resolve_collection(collection.directory)
        for conf in list_files(root, (".conf",), recursive=True).files:  # links: not copied
            dest = target / conf.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(conf, dest)
        for doc in collection.documents:
            ann = Path(doc.path)
            for path in (ann.with_suffix(".txt"), ann):
                if path.exists():
                    dest = target / path.relative_to(root)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, dest)
        out.append(target)
    return out


__all__ = ["CheckedCollection", "collect_texts", "filtered_copy", "load_all_checked", "load_checked"]
