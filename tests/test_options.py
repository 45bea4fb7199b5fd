"""gpushare.verify.memory_source on its own: which memory sources `verify` and `measure` accept.

A Prometheus duration is one or more `<number><unit>` with the units ms, s, m, h, d, w, y (Prometheus'
PromQL duration syntax, e.g. `1h30m`); a window needs Prometheus (an exporter page holds only the current
value); Prometheus is reached over http or https.
"""

from __future__ import annotations

import argparse

import pytest

from gpushare.cli.arguments import add_source_arguments, source_from_args
from gpushare.errors import GpushareError
from gpushare.verify.memory_exporters import NamedExporter
from gpushare.verify.memory_source import MemorySource

PROMETHEUS = "https://10.0.0.1/api/v1/namespaces/monitoring/services/prometheus-k8s:9090/proxy"


def parsed(*argv: str, window: bool = True) -> MemorySource:
    parser = argparse.ArgumentParser()
    add_source_arguments(parser, window=window)
    return source_from_args(parser.parse_args(argv))


def test_the_defaults_read_the_exporter_pods() -> None:
    assert parsed() == MemorySource()
    assert parsed(window=False) == MemorySource()


def test_a_window_with_prometheus_and_named_exporters() -> None:
    assert parsed(
        "--prometheus", PROMETHEUS, "--window", "1h30m", "--exporter", "obs/gpu:9500"
    ) == MemorySource(prometheus=PROMETHEUS, named=(NamedExporter("obs", "gpu", 9500),), window="1h30m")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("--window", "7d"),
            "--window needs --prometheus: an exporter page holds only the current value",
        ),
        (
            ("--prometheus", PROMETHEUS, "--window", "7 days"),
            "--window '7 days': not a Prometheus duration (e.g. 7d, 12h, 90m)",
        ),
        (
            ("--prometheus", "10.0.0.1:9090"),
            "--prometheus '10.0.0.1:9090': expected an http:// or https:// URL",
        ),
    ],
)
def test_a_malformed_source_is_one_clear_error(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(GpushareError) as caught:
        parsed(*argv)
    assert caught.value.message == message
