"""Tiny checkpoints are fixtures: their recipes live in toolkit/models/tiny_recipes (one module per arch), never in
the family files under toolkit/models/archs, which describe the real model only."""

import ast
import inspect
import re
from pathlib import Path

import pytest

from toolkit.models import tiny
from toolkit.models.base_model import BaseModel
from toolkit.models.registry import ARCHS, get_model_class

ARCHS_DIR = Path(__file__).resolve().parents[1] / "toolkit" / "models" / "archs"
RECIPE_NAMES = {"build_tiny", "tiny_sample"}


def recipe_definitions(path: Path) -> list[str]:
    """Where ``path`` defines or reads a recipe name: functions, assignments and attribute reads."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        found += [f"{path.name}:{node.lineno} {name}" for name in names if name in RECIPE_NAMES]
    return found


def test_no_family_file_holds_a_tiny_recipe():
    files = sorted(ARCHS_DIR.glob("*.py"))
    assert len(files) > len(ARCHS) // 2  # the glob found the family files
    found = [hit for path in files for hit in recipe_definitions(path)]
    assert not found, f"tiny recipes belong in toolkit/models/tiny_recipes: {found}"
    assert not RECIPE_NAMES & set(vars(BaseModel))


def test_the_scan_sees_a_recipe_where_there_is_one(tmp_path):
    """The check above can fail: a class-level recipe of the old shape is found."""
    path = tmp_path / "family.py"
    path.write_text(
        "class M:\n    tiny_sample = dict(width=64)\n\n    @staticmethod\n    def build_tiny(variant=None):\n"
        "        return M.build_tiny\n"
    )
    assert [hit.split(" ")[1] for hit in recipe_definitions(path)] == ["tiny_sample", "build_tiny", "build_tiny"]


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_registered_arch_has_a_recipe_module(arch):
    module = tiny.recipe_module(arch)
    assert module is not None, f"no toolkit/models/tiny_recipes/{arch}.py"
    assert module.__name__.rpartition(".")[2] == re.sub(r"\W", "_", arch)
    build = tiny.recipe_builder(arch)
    assert build is module.build_tiny
    assert inspect.signature(build).parameters["variant"].default is None
    assert isinstance(module.SAMPLE, dict) and module.SAMPLE["output_ext"] in get_model_class(arch).output_exts
    assert tiny.sample(arch) == module.SAMPLE and tiny.sample(arch) is not module.SAMPLE  # a copy for callers
    assert not RECIPE_NAMES & {name for c in get_model_class(arch).__mro__ for name in vars(c)}


def test_an_arch_without_a_recipe_is_a_clear_error():
    for lookup, attr in ((tiny.recipe_builder, "build_tiny"), (tiny.sample, "SAMPLE")):
        with pytest.raises(ValueError, match=rf"toolkit/models/tiny_recipes/no_such_arch\.py defines no {attr}"):
            lookup("no_such_arch")
    with pytest.raises(ValueError, match="has no tiny recipe"):
        tiny.tiny_checkpoint("no_such_arch/b")
