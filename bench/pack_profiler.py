"""Run a policy pack under cProfile: `python bench/pack_profiler.py ENGINE_ADDRESS PACK_DIR`.

`python -m bench.profiling --kind pack` points the policy driver at a small shell script that calls this
file instead of `python -m pulumi.policy`. Every thread is profiled (the analyzer RPCs run on gRPC's
worker threads) and the merged statistics go to the file named by `BENCH_PACK_PROFILE` when the pack
exits (the driver stops it with SIGINT, which pulumi_policy turns into a normal exit).
"""

from __future__ import annotations

import atexit
import cProfile
import os
import pstats
import runpy
import sys
import threading
from typing import Any, Final

OUTPUT_VARIABLE: Final = "BENCH_PACK_PROFILE"


def main() -> None:
    output = os.environ[OUTPUT_VARIABLE]
    thread_profilers: list[cProfile.Profile] = []

    def start_in_new_thread(frame: Any, event: str, arg: Any) -> None:
        profiler = cProfile.Profile()
        thread_profilers.append(profiler)
        profiler.enable()

    main_profiler = cProfile.Profile()

    def dump() -> None:
        main_profiler.disable()
        stats = pstats.Stats(main_profiler)
        for profiler in thread_profilers:
            stats.add(profiler)
        stats.dump_stats(output)

    atexit.register(dump)
    threading.setprofile(start_in_new_thread)
    main_profiler.enable()
    sys.argv = ["pulumi.policy", *sys.argv[1:]]
    runpy.run_module("pulumi.policy", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
