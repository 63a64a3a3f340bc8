"""README.md's family table against the registry: a user reads there which archs are served and which checkpoint
each one offers, so a family registered without a row, a row saying "yes" for an arch the engine refuses, or a hub
id that differs from the one the picker fills in (the family's ``hub_id``) fails here."""

from pathlib import Path

from toolkit.config_modules import ARCH_ALIASES
from toolkit.models.registry import ARCHS, get_model_class

README = Path(__file__).resolve().parents[1] / "README.md"


def family_rows() -> dict:
    """arch -> (modality, served, hub id or note) from the table under "## Families"."""
    text = README.read_text()
    section = text[text.index("\n## Families") : text.index("\n## ", text.index("\n## Families") + 1)]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| arch ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0].split()[0]] = tuple(cells[1:])
    return rows


def test_every_registered_family_has_a_served_row_with_its_hub_id():
    rows = family_rows()
    assert sorted(a for a in ARCHS if a not in rows) == []
    assert sorted(a for a in ARCHS if rows[a][1] != "yes") == []
    wrong = {}
    for arch in ARCHS:
        hub_id = get_model_class(arch).hub_id
        shown = rows[arch][2].split()[0].rstrip(";,")
        if hub_id and shown != hub_id:
            wrong[arch] = (hub_id, shown)
    assert wrong == {}


def test_a_served_row_names_a_family_or_an_alias_and_an_unserved_one_says_why():
    rows = family_rows()
    assert sorted(a for a, (_, served, _) in rows.items() if served == "yes" and a not in ARCHS) == sorted(ARCH_ALIASES)
    unexplained = [a for a, (_, served, _) in rows.items() if served != "yes" and not served.startswith("no (")]
    assert unexplained == []
