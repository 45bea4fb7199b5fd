"""A stack file as the real Pulumi CLI saves it. `pulumi stack init prod --secrets-provider passphrase`
(the CLI v3.274.0 of make engine, run on this repository on 2026-12-04) rewrote Pulumi.prod.yaml: it
quoted `gpushare:protectPools: true` as `"true"` (the CLI keeps config values as strings) and appended
an `encryptionsalt:` line; nothing else changed. The program reads both forms as true (the CLI hands it
every value as a string, which it decodes as JSON), so gpushare's offline loader must too."""

from __future__ import annotations

from pathlib import Path

from conftest import PROJECT_DIR

from gpushare.stack.loading import load_stack_file

# The salt line as that run wrote it (a passphrase salt, no secret).
ENCRYPTION_SALT = "encryptionsalt: v1:X7oKKT9VTtA=:v1:eT/DDHbYQSUq64Ss:/zvo2VRxQWGAJ7XXqboe+gYVZdw4lg==\n"


def test_a_stack_file_the_cli_saved_loads_as_the_one_it_came_from(tmp_path: Path) -> None:
    original = (PROJECT_DIR / "Pulumi.prod.yaml").read_text()
    assert original.count("  gpushare:protectPools: true\n") == 1
    saved = (
        original.replace("  gpushare:protectPools: true\n", '  gpushare:protectPools: "true"\n')
        + ENCRYPTION_SALT
    )
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(saved)
    loaded = load_stack_file(path)
    assert loaded.protect_pools is True
    assert loaded == load_stack_file(PROJECT_DIR / "Pulumi.prod.yaml")
