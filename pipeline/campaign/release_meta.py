"""What a release says about itself: who made the corpus, what it is, how to cite it, its licence.

Input: the options of ``pgx-corpus release`` (``--author``, ``--description``, ``--license``,
``--cite-pgxcorpus-method``) and, optionally, a ``CITATION.cff`` given with ``--citation`` (the corpus's
own: its ``title``, ``abstract``, ``authors``, ``license`` and ``preferred-citation`` are taken; an option
overrides the file).  Output: a [`Metadata`][pipeline.campaign.release_meta.Metadata], the release's
``CITATION.cff`` text ([`citation_cff`][pipeline.campaign.release_meta.citation_cff]) and the licence's
URI and text ([`licence`][pipeline.campaign.release_meta.licence], from the ``spdx`` package's copy of
the SPDX License List).

Nothing is made up: the authors are the people the user names (never the project, never "the
annotators"), the corpus is described by the user's text, and PGxCorpus (Legrand et al., Scientific Data
2020) is cited only as the method, only when the user says the corpus follows it.  Without authors a
release has no ``CITATION.cff``; [`missing`][pipeline.campaign.release_meta.missing] lists what is
missing, which ``--strict-metadata`` refuses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline import yamlfile
from pipeline.errors import InputError


class MetadataError(InputError):
    """A ``--citation`` file, an ``--author`` or a ``--license`` cannot be used (the message names it)."""


PAPER_AUTHORS = (("Joël", "Legrand"), ("Romain", "Gogdemir"), ("Cédric", "Bousquet"), ("Kevin", "Dalleau"),
                 ("Marie-Dominique", "Devignes"), ("William", "Digan"), ("Chia-Ju", "Lee"),
                 ("Ndeye-Coumba", "Ndiaye"), ("Nadine", "Petitpain"), ("Patrice", "Ringot"),
                 ("Malika", "Smaïl-Tabbone"), ("Yannick", "Toussaint"), ("Adrien", "Coulet"))
"""The 13 authors of the PGxCorpus paper (Legrand et al., Scientific Data 7:3, 2020), given and family names."""

PGXCORPUS_METHOD = ("Legrand J, Gogdemir R, Bousquet C, et al. PGxCorpus, a manually annotated corpus for "
                    "pharmacogenomics. Sci Data 7, 3 (2020). https://doi.org/10.1038/s41597-019-0342-9")
"""The method's reference, as the datasheet writes it."""

#: the keys of a given CITATION.cff that describe the corpus and are carried into the release's
CARRIED_KEYS = ("abstract", "authors", "contact", "doi", "identifiers", "keywords", "preferred-citation",
                "references", "repository", "url")


@dataclass(frozen=True)
class Licence:
    """A licence as the release ships it.

    Attributes:
        id: The SPDX identifier (``CC-BY-NC-4.0``).
        name: Its full name, from the SPDX License List.
        uri: Where its legal text is published (the SPDX License List's first source).
        text: Its text (the SPDX template with its markup resolved to the original wording); ``None`` when
            the ``spdx`` package does not hold it.
        source: Where the text and URI come from: the SPDX License List as the ``spdx`` package (its
            version) ships it.
    """

    id: str
    name: str
    uri: str
    text: str | None
    source: str


@dataclass(frozen=True)
class Metadata:
    """What the user says about the corpus released.

    Attributes:
        name: The corpus name (``--name``, else the ``title`` of ``--citation``).
        description: What the corpus is, in the user's words (``--description``, else ``abstract``); empty
            when none was given.
        authors: CFF person or entity mappings (``family-names``/``given-names`` or ``name``), in order.
        license: The SPDX id (``--license``, else ``license`` of ``--citation``, else of the export
            configuration); empty for none.
        pgxcorpus_method: The user says the corpus follows the PGxCorpus method: it is cited as the method.
        carried: The other keys of ``--citation`` carried into the release's ``CITATION.cff``
            (``preferred-citation``, ``doi``, ``references`` ...).
        citation_file: The ``--citation`` file's name, for the datasheet; empty without one.
    """

    name: str
    description: str = ""
    authors: tuple[Mapping[str, str], ...] = ()
    license: str = ""
    pgxcorpus_method: bool = False
    carried: Mapping[str, Any] = field(default_factory=dict)
    citation_file: str = ""


def parse_author(text: str) -> dict[str, str]:
    """Read one ``--author``: ``Family, Given`` for a person, anything without a comma for an entity.

    Args:
        text: The option's value, e.g. ``Legrand, Joël`` or ``PGxCorpus consortium``.

    Returns:
        A CFF person (``family-names``, ``given-names``) or entity (``name``).

    Raises:
        MetadataError: If a part is empty or there is more than one comma.
    """
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1 and parts[0]:
        return {"name": parts[0]}
    if len(parts) == 2 and all(parts):
        return {"family-names": parts[0], "given-names": parts[1]}
    raise MetadataError(f"--author {text!r}: expected 'Family, Given' for a person or a name without a comma "
                        "for an organisation")


def _author(entry: Any, where: str) -> dict[str, str]:
    if not isinstance(entry, Mapping) or not any(str(entry.get(k) or "").strip() for k in ("family-names", "name")):
        raise MetadataError(f"{where}: each author needs a non-empty family-names or name, got {entry!r}")
    return {str(k): str(v) for k, v in entry.items()}


def read_citation(path: Path) -> dict[str, Any]:
    """Read a ``CITATION.cff`` given to ``release`` (YAML, CFF 1.2.0 keys).

    Args:
        path: The file.

    Returns:
        Its top-level mapping, authors checked.

    Raises:
        MetadataError: If it cannot be read, is not a YAML mapping, or its ``authors`` is not a list of
            persons or entities each with a ``family-names`` or ``name``.
    """
    data = yamlfile.read_mapping(path, MetadataError, "the citation file")
    authors = data.get("authors", [])
    if not isinstance(authors, list):
        raise MetadataError(f"{path}: authors must be a list")
    data["authors"] = [_author(a, f"{path}: authors[{i}]") for i, a in enumerate(authors)]
    for key in ("title", "abstract", "license"):
        if key in data and not isinstance(data[key], str):
            raise MetadataError(f"{path}: {key} must be a string")
    return data


def metadata(name: str | None, description: str | None, authors: Sequence[str], license_id: str | None,
             citation: Path | None, pgxcorpus_method: bool = False, config_license: str = "") -> Metadata:
    """Gather the release's metadata: an option wins over the ``--citation`` file, which wins over defaults.

    Args:
        name: ``--name``; ``None`` for the file's ``title``, else ``corpus``.
        description: ``--description``; ``None`` for the file's ``abstract``.
        authors: ``--author`` values (replace the file's authors when any is given).
        license_id: ``--license``; ``None`` for the file's ``license``, else ``config_license``.
        citation: ``--citation``; ``None`` for none.
        pgxcorpus_method: ``--cite-pgxcorpus-method``.
        config_license: The export configuration's ``license``.

    Returns:
        The metadata.

    Raises:
        MetadataError: If the citation file or an author cannot be read.
    """
    data = read_citation(citation) if citation is not None else {}
    people = tuple(parse_author(a) for a in authors) or tuple(data.get("authors") or ())
    return Metadata(
        name=name or str(data.get("title") or "") or "corpus",
        description=(description if description is not None else str(data.get("abstract") or "")).strip(),
        authors=people,
        license=license_id or str(data.get("license") or "") or config_license,
        pgxcorpus_method=pgxcorpus_method,
        carried={k: data[k] for k in CARRIED_KEYS if k in data and k not in ("authors", "abstract")},
        citation_file=citation.name if citation is not None else "",
    )


def missing(meta: Metadata) -> list[str]:
    """List what a release would go without: authors (then no ``CITATION.cff``) and a licence.

    Args:
        meta: The metadata.

    Returns:
        One phrase per missing item, naming the options that give it; empty when nothing is missing.
    """
    out = []
    if not meta.authors:
        out.append("no authors (--author, or authors in --citation): no CITATION.cff is written")
    if not meta.license:
        out.append("no licence (--license, license in --citation or in --config): none is stated")
    return out


_OPTIONAL = re.compile(r"<<(?:beginOptional[^>]*|endOptional)>>")
_VAR = re.compile(r"<<var;[^>]*?original=(?P<original>.*?);match=[^>]*>>", re.S)


def licence(spdx_id: str) -> Licence:
    """Look up a licence in the SPDX License List that the ``spdx`` package ships.

    Args:
        spdx_id: The SPDX identifier, as given (matched case-insensitively, returned as the list spells it).

    Returns:
        The licence with its URI and text (the template's optional parts kept, its variables replaced by
        their original wording).

    Raises:
        MetadataError: If the id is not in the list (a typo would otherwise be published).
    """
    from importlib.metadata import version

    import spdx

    source = f"SPDX License List of the spdx package {version('spdx')}"
    known = {str(rec["id"]).lower(): rec for rec in spdx.licenses()}
    record = known.get(spdx_id.lower())
    if record is None:
        raise MetadataError(f"--license {spdx_id!r}: not an identifier of the {source} (e.g. CC-BY-NC-4.0, "
                            "CC-BY-4.0, CC0-1.0, MIT)")
    found = spdx.License(record)
    template = found.template if record.get("template") else None
    text = _VAR.sub(lambda m: m.group("original"), _OPTIONAL.sub("", template)) if template else None
    sources = list(record.get("sources") or [])
    uri = sources[0] if sources else f"https://spdx.org/licenses/{record['id']}.html"
    return Licence(str(record["id"]), str(record["name"]), uri, text, source)


def _person(given: str, family: str) -> dict[str, str]:
    return {"family-names": family, "given-names": given}


def pgxcorpus_reference() -> dict[str, Any]:
    """The PGxCorpus paper as a CFF reference (the method, cited when the user says the corpus follows it).

    Returns:
        A CFF ``article`` reference with its 13 authors.
    """
    return {"type": "article", "title": "PGxCorpus, a manually annotated corpus for pharmacogenomics",
            "authors": [_person(g, f) for g, f in PAPER_AUTHORS], "journal": "Scientific Data", "volume": 7,
            "start": 3, "year": 2020, "doi": "10.1038/s41597-019-0342-9"}


def citation_cff(meta: Metadata, version: str, date: str, lic: Licence | None) -> str | None:
    """Write ``CITATION.cff`` (CFF 1.2.0) for the release: the corpus with its authors.

    The corpus's own ``preferred-citation`` and ``references`` come from ``--citation``; with
    ``pgxcorpus_method`` the PGxCorpus paper is added to ``references`` (the method, never the corpus).

    Args:
        meta: The metadata.
        version: The corpus version (``unversioned`` when empty).
        date: The release date; left out when empty.
        lic: The licence (its id and URI are written); ``None`` for none.

    Returns:
        The YAML text; ``None`` when there are no authors (a CFF without authors is not valid, and none
        is made up).
    """
    if not meta.authors:
        return None
    doc: dict[str, Any] = {
        "cff-version": "1.2.0", "message": "If you use this corpus, please cite it as below.", "type": "dataset",
        "title": meta.name, "version": version or "unversioned",
    }
    if meta.description:
        doc["abstract"] = meta.description
    doc["authors"] = [dict(a) for a in meta.authors]
    if date:
        doc["date-released"] = date
    if lic is not None:
        doc["license"] = lic.id
        doc["license-url"] = lic.uri
    carried = dict(meta.carried)
    if meta.pgxcorpus_method:
        refs = list(carried.get("references") or [])
        if not any(isinstance(r, Mapping) and r.get("doi") == "10.1038/s41597-019-0342-9" for r in refs):
            refs.append(pgxcorpus_reference())
        carried["references"] = refs
    doc.update(carried)
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def author_names(meta: Metadata) -> list[str]:
    """The authors as the datasheet writes them (``Given Family`` or the entity's name).

    Args:
        meta: The metadata.

    Returns:
        One name per author, in order.
    """
    return [a.get("name") or " ".join(p for p in (a.get("given-names", ""), a.get("family-names", "")) if p)
            for a in meta.authors]
