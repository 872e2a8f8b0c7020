"""The doc-block parser's marks, output comparison and per-extra runner, on hand-built files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mdblocks import MarkError, compare_output, main, read_blocks, shown_outputs


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    return path


PAGE = """# Title

<!-- doc: extra=langchain,llamaindex -->
```python
print("a", 0.1234)
```

<!-- doc: output -->
```text
a 0.1234
```

```python
print("unmarked")
```
"""


def test_marks_are_read_from_the_line_above_the_fence(tmp_path: Path) -> None:
    blocks = read_blocks(_write(tmp_path, PAGE))
    assert [b.extras for b in blocks] == [("langchain", "llamaindex"), (), ()]
    assert [b.is_output for b in blocks] == [False, True, False]
    assert shown_outputs(blocks) == {4: blocks[1]}


@pytest.mark.parametrize(
    "text",
    [
        "<!-- doc: colour=red -->\n```python\nx = 1\n```\n",  # unknown key
        "<!-- doc: extra=langchain -->\n\n```python\nx = 1\n```\n",  # not right above a fence
    ],
)
def test_bad_marks_are_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(MarkError):
        read_blocks(_write(tmp_path, text))


def test_an_output_block_needs_a_python_block_above(tmp_path: Path) -> None:
    blocks = read_blocks(_write(tmp_path, "<!-- doc: output -->\n```text\nx\n```\n"))
    with pytest.raises(MarkError, match="no runnable Python block"):
        shown_outputs(blocks)


def test_compare_output_text_exact_numbers_to_tolerance() -> None:
    shown = "gmmr:\n  0.802 Coffee keeps you awake\n  0.711 Late coffee\n"
    assert compare_output("gmmr:\n  0.803 Coffee keeps you awake\n  0.710 Late coffee\n", shown) == []
    assert compare_output("gmmr:  \n  0.802 Coffee keeps you awake\n  0.711 Late coffee\n\n", shown) == []
    # another order, another document, a score off by more than the tolerance, a missing line
    assert compare_output("gmmr:\n  0.711 Late coffee\n  0.802 Coffee keeps you awake\n", shown)
    assert compare_output("gmmr:\n  0.802 Coffee keeps you awake\n  0.711 Napping\n", shown)
    assert compare_output("gmmr:\n  0.812 Coffee keeps you awake\n  0.711 Late coffee\n", shown)
    assert compare_output("gmmr:\n  0.802 Coffee keeps you awake\n", shown) == ["2 lines printed, 3 shown"]


def _run(path: Path, extra: str) -> int:
    return main(["run", str(path), "--extra", extra, "--python", sys.executable])


def test_run_passes_a_block_that_prints_what_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(_write(tmp_path, PAGE), "langchain") == 0
    assert "page.md:4: ok" in capsys.readouterr().out


def test_run_fails_on_other_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(_write(tmp_path, PAGE.replace("a 0.1234", "b 0.1234")), "llamaindex") == 1
    assert "FAILED" in capsys.readouterr().out


def test_run_fails_on_a_block_that_is_not_self_contained(tmp_path: Path) -> None:
    """The old README's LlamaIndex block used ``chunks`` from the LangChain block above it."""
    page = PAGE + "\n<!-- doc: extra=llamaindex -->\n```python\nprint(chunks)\n```\n"
    assert _run(_write(tmp_path, page), "llamaindex") == 1


def test_run_fails_on_a_block_that_needs_more_than_its_extra(tmp_path: Path) -> None:
    page = "<!-- doc: extra=langchain -->\n```python\nimport module_the_extra_does_not_install\n```\n"
    assert _run(_write(tmp_path, page), "langchain") == 1


def test_run_without_blocks_for_the_extra_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(_write(tmp_path, PAGE), "postgres") == 0
    assert "no block" in capsys.readouterr().out
