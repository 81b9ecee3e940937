"""brat's own code on the project's brat files: the shim finds what brat's client would show, and the
campaign's generated types are valid brat types.

Covers: pipeline.brat.conf, pipeline.campaign.conf, pipeline.schema
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.brat.conf import write_conf_files
from pipeline.campaign.conf import campaign_annotation_conf, campaign_visual_conf, disputed_type, undisputed_type
from pipeline.schema import load_schema
from tests.brat.brat_shim import SERVER_SRC, brat_server, documents_with_messages

SCHEMA = load_schema()
TEXT = "Warfarin doses were lower in CYP2C9 carriers."


def collection(directory: Path, ann: str, extra_conf: str = "") -> Path:
    write_conf_files(directory, SCHEMA)
    conf = directory / "annotation.conf"
    conf.write_text(conf.read_text(encoding="utf-8").rstrip("\n") + "\n" + extra_conf, encoding="utf-8")
    (directory / "100_1.txt").write_text(TEXT, encoding="utf-8")
    (directory / "100_1.ann").write_text(ann, encoding="utf-8")
    return directory


RELATION = "T1\tChemical 0 8\tWarfarin\nT2\tGene_or_protein 29 35\tCYP2C9\nR1\tisAssociatedWith Arg1:T1 Arg2:T2\t\n"


def test_brat_shows_an_error_for_a_modality_attribute_on_a_relation(tmp_path: Path) -> None:
    """The old form (nlplab/brat#791): brat's client cannot place an attribute on a relation."""
    old = collection(tmp_path / "old", RELATION + "A1\tNegated R1\n", "Negated\tArg:<RELATION>\n")
    found = documents_with_messages(old, tmp_path / "s1")
    assert found == {"100_1": ["error: Annotation R1, referenced from attribute A1, does not exist."]}
    # the project's form: the modality in the relation's note
    new = collection(tmp_path / "new", RELATION + "#1\tAnnotatorNotes R1\tneg | check\n")
    assert documents_with_messages(new, tmp_path / "s2") == {}
    # brat's verification runs too (tools.conf turns it on): an undeclared type is reported
    bad = collection(tmp_path / "bad", RELATION.replace("isAssociatedWith", "regulates"))
    assert "regulates is not a known relation type" in " ".join(documents_with_messages(bad, tmp_path / "s3")["100_1"])


def test_generated_relation_types_are_valid_brat_types(tmp_path: Path) -> None:
    write_conf_files(tmp_path, SCHEMA)
    base = (tmp_path / "annotation.conf").read_text(encoding="utf-8")
    conf = campaign_annotation_conf(base, ["alice", "bob"])
    visual = campaign_visual_conf((tmp_path / "visual.conf").read_text(encoding="utf-8"), ["alice", "bob"],
                                  SCHEMA.relation_types())
    with brat_server(tmp_path, tmp_path / "work") as brat:
        normalize = brat["projectconfig"].normalize_to_storage_form
        for rel in SCHEMA.relation_types():
            generated = disputed_type(rel)
            assert undisputed_type(generated) == rel
            # brat's storage form, and no trailing digit (brat's client strips one when it looks up labels)
            assert normalize(generated) == generated and not re.search(r"\d$", generated)
            assert f"\n{generated}\t" in conf
            assert f"\n{generated} | ≠ " in visual and f"\n{generated}\tcolor:" in visual
    assert undisputed_type("influences") is None
    assert (SERVER_SRC / "annotator.py").is_file()


def test_brats_client_never_asks_for_a_normalization_database(tmp_path: Path) -> None:
    """brat's client asks the server for a normalization database's entry (``normData``, ``normGetName``)
    when it shows or edits an entity with a reference, unless the collection's tools.conf says ``DB:<NONE>``;
    there is none, and ``campaign serve`` refuses those actions, so brat would show an error on a mere hover."""
    write_conf_files(tmp_path, SCHEMA)
    with brat_server(tmp_path, tmp_path / "work") as brat:
        norms = brat["projectconfig"].ProjectConfiguration(str(tmp_path)).get_normalization_config()
    assert {"MESH", "NCBIGene"} <= {n[0] for n in norms}
    assert [n[0] for n in norms if n[3] != "<NONE>"] == []
