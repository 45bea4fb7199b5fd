"""The stack file as a document, before any key is judged: its size bound, at the byte, and its shape.

4 MiB = 4 x 1024 x 1024 = 4 194 304 bytes is the largest stack file read; one byte more is refused before
YAML parses it (the bound is written here by hand, so a bound moved by a few KiB fails this test;
tests/test_yaml_typed_stacks.py reads exactly the bound). A document that is not a mapping, or whose
`config:` is not one, is refused with one line (Pulumi's stack files are `config:` mappings).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PROJECT_DIR

from gpushare.errors import ConfigError
from gpushare.stack.loading import load_stack_file

FOUR_MIB = 4_194_304
SHAPE_ERROR = "Pulumi.bad.yaml: expected a mapping with a `config:` mapping"


def test_a_stack_file_of_4_mib_and_one_byte_is_refused(tmp_path: Path) -> None:
    # prod's stack, then a comment that brings the file to 4 MiB + 1: valid YAML, a valid stack.
    head = (PROJECT_DIR / "Pulumi.prod.yaml").read_bytes() + b"#"
    path = tmp_path / "Pulumi.big.yaml"
    path.write_bytes(head + b"x" * (FOUR_MIB + 1 - len(head)))
    assert path.stat().st_size == 4_194_305
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path, "big")
    assert str(caught.value) == "Pulumi.big.yaml: larger than 4 MiB; not a stack file"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("- config\n", id="a-list"),
        pytest.param("just a string\n", id="a-string"),
        pytest.param("config:\n- gpushare:pools\n", id="config-a-list"),
        pytest.param("config: 3\n", id="config-a-number"),
    ],
)
def test_a_document_that_is_not_a_config_mapping_is_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path, "bad")
    assert str(caught.value) == SHAPE_ERROR
