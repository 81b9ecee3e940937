"""``campaign review --remerge DOC``: a phase-1 correction made after the merge reaches the senior.

``review`` never overwrites a senior's document: a phase-1 version changed after its merge is only
reported (``changed_after_merge``).  When the manager has reopened such a document for its annotator
and the annotator has finished it again, [`remerge`][pipeline.campaign.remerge.remerge] merges the two phase-1 versions
again and replaces the senior's copy and its reference (``review/merged/<senior>/``), provided the senior has
not started it (their version says the same as the merged document as it was written,
[`file_started`][pipeline.campaign.assignments.file_started]).

Refused before anything is written ([`CampaignError`][pipeline.campaign.layout.CampaignError], naming each
document): an unknown document, one not in phase 2 yet, one whose phase-1 versions are not both
finished (or are discarded, or held back), one the senior has started.  Each document is written under
its lock, ``.ann`` first, ``.txt`` last.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.brat.standoff import dumps
from pipeline.campaign import assignments as asg
from pipeline.campaign.documents import without_markers
from pipeline.campaign.layout import CampaignError, read_campaign
from pipeline.campaign.locks import document_lock
from pipeline.campaign.merge import merge_versions
from pipeline.campaign.review import phase1_states


def remerge(campaign_dir: Path, names: Sequence[str]) -> list[str]:
    """Merge the two phase-1 versions of documents again and replace the senior's copies.

    For each file, the merged document is written first into the senior's reference
    (``review/merged/<senior>/``), then into the senior's phase-2 collection, each under the document's
    lock ([`document_lock`][pipeline.campaign.locks.document_lock]), ``.ann`` before ``.txt``.  Not atomic
    per file: a crash between the two writes leaves the ``.ann`` new and the ``.txt`` old.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        names: brat document names (``100_1``), or campaign documents (every one of their files).

    Returns:
        The brat document names rewritten, in the order given.

    Raises:
        CampaignError: If any name is refused (see the module docstring); nothing is written then,
            and the message names every refused document and why.
    """
    root = Path(campaign_dir)
    campaign = read_campaign(root)
    by_file = {name: e for e in campaign["documents"] for name in e["files"]}
    by_doc = {e["document"]: e for e in campaign["documents"]}
    wanted: list[str] = []
    refused: list[str] = []
    for name in names:
        if name in by_file:
            wanted.append(name)
        elif name in by_doc and by_doc[name]["files"]:
            wanted += by_doc[name]["files"]
        else:
            refused.append(f"{name}: not a document of the campaign")
    planned = []
    for name in wanted:
        entry = by_file[name]
        senior = entry.get("phase2")
        state = next(s for s in phase1_states(root, {"documents": [{**entry, "files": [name]}]}))
        copy = asg.collection_dir(root, "2", senior or "") / f"{name}.txt"
        if not senior or not copy.exists():
            refused.append(f"{name}: not in phase 2 yet (campaign review merges it when both annotators finish)")
        elif state.state != "ready":
            refused.append(f"{name}: phase 1 is {state.state.replace('_', ' ')}; both annotators must finish it")
        elif asg.file_started(root, "2", senior, name):
            refused.append(f"{name}: {senior} has started it in phase 2; not re-merged")
        else:
            a, b = state.annotators
            da, db = state.versions[a].doc, state.versions[b].doc
            assert da is not None and db is not None
            merged, _ = merge_versions([(a, without_markers(da)), (b, without_markers(db))])
            planned.append((name, senior, merged))
    if refused:
        raise CampaignError("remerge refused: " + "; ".join(refused))
    done = []
    for name, senior, merged in planned:
        reference = asg.reference_dir(root, "2", senior)
        reference.mkdir(parents=True, exist_ok=True)
        for directory in (reference, asg.collection_dir(root, "2", senior)):  # the reference first
            with document_lock(root, directory / name):
                (directory / f"{name}.ann").write_text(dumps(merged), encoding="utf-8", newline="\n")
                (directory / f"{name}.txt").write_text(merged.text, encoding="utf-8", newline="\n")
        done.append(name)
    return done
