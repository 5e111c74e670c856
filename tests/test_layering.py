"""The layering the README promises: stages (data_gen, train, eval, serve) stand on runtime and toolcore
and never import one another; runtime stands on toolcore alone; toolcore imports neither. Every import
counts, the lazy ones inside functions included (they are the ones that slip in)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("data_gen", "train", "eval", "serve")
ALLOWED = {**{s: {"runtime", "toolcore"} for s in STAGES}, "runtime": {"toolcore"}, "toolcore": set()}
OURS = set(ALLOWED)


def imported_packages(path: Path) -> dict[str, int]:
    """Top-level packages of ours that the file imports -> the first line doing so."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in OURS:
                found.setdefault(top, node.lineno)
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_the_layers_below_it(package):
    folder = ROOT / package
    if not folder.exists():
        pytest.skip(f"{package}/ does not exist in this checkout")
    bad = [f"{path.relative_to(ROOT)}:{line} imports {top}"
           for path in sorted(folder.rglob("*.py"))
           for top, line in imported_packages(path).items()
           if top != package and top not in ALLOWED[package]]
    assert not bad, "\n".join(bad)


def test_the_checker_sees_lazy_imports(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from eval.runner import evaluate\n    import train.run\n")
    assert imported_packages(f) == {"eval": 2, "train": 3}
