"""gpushare.offline.stack_files on its own: stack files the Pulumi CLI accepts that hold little.

An empty `Pulumi.<stack>.yaml` (what `pulumi stack init` leaves before any `pulumi config set`) is a stack
without config: the project's defaults from Pulumi.yaml still apply. `ns:config:name` is the CLI's legacy
spelling of `ns:name` (sdk/go/common/resource/config/key.go, ParseKey); a `{secure: ...}` value is
secret only when it is exactly that one key.
"""

from __future__ import annotations

from pathlib import Path

from gpushare.offline.stack_files import SECRET_PLACEHOLDER, load_stack_config, namespaced_key


def project(tmp_path: Path, stack_text: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text(
        "name: sample\nruntime: python\nconfig:\n  sample:replicas:\n    default: 1\n"
    )
    (tmp_path / "Pulumi.dev.yaml").write_text(stack_text)
    return tmp_path


def test_an_empty_stack_file_is_a_stack_without_config(tmp_path: Path) -> None:
    assert load_stack_config(project(tmp_path, ""), "dev") == ({"sample:replicas": "1"}, [])


def test_a_stack_file_of_comments_only_is_empty_too(tmp_path: Path) -> None:
    assert load_stack_config(project(tmp_path, "# no config yet\n"), "dev") == ({"sample:replicas": "1"}, [])


def test_the_legacy_config_namespace_and_plain_keys() -> None:
    assert namespaced_key("aws:config:region", "sample") == "aws:region"
    assert namespaced_key("sample:replicas", "sample") == "sample:replicas"
    assert namespaced_key("replicas", "sample") == "sample:replicas"
    assert namespaced_key("a:b:c", "sample") == "a:b:c"  # not the legacy form: left for Pulumi to refuse


def test_only_a_lone_secure_key_is_a_secret(tmp_path: Path) -> None:
    stack = (
        "config:\n"
        "  sample:token:\n    secure: v1:bm9uY2U=:Y2lwaGVy\n"
        "  sample:pair:\n    secure: v1:bm9uY2U=:Y2lwaGVy\n    note: not a secure value\n"
    )
    values, secret_keys = load_stack_config(project(tmp_path, stack), "dev")
    assert values == {
        "sample:token": SECRET_PLACEHOLDER,
        "sample:pair": '{"note":"not a secure value","secure":"v1:bm9uY2U=:Y2lwaGVy"}',
        "sample:replicas": "1",
    }
    assert secret_keys == ["sample:token"]
