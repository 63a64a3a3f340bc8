"""Run one or more job configs: `python run.py <config> [<config> ...] [-r] [-n NAME] [-l LOG]`.

The UI starts jobs exactly this way (cwd = toolkit root, `AITK_JOB_ID` in the env) and
reads the exit code: 0 means the job wrote its own final status (completed, stopped or
queued); anything else makes the UI mark the job as errored.
"""

import os
import sys

TOOLKIT_ROOT = os.path.dirname(os.path.abspath(__file__))

try:
    from dotenv import load_dotenv
except ImportError:  # optional: .env support only
    load_dotenv = None
if load_dotenv is not None:
    load_dotenv()

os.environ.setdefault("HF_XET_HIGH_PERFORMANCE", "1")
os.environ.setdefault("HF_HUB_DISABLE_XET", "0")
os.environ["NO_ALBUMENTATIONS_UPDATE"] = "1"
os.environ["OPENCV_FFMPEG_LOGLEVEL"] = "-8"
os.environ["DISABLE_TELEMETRY"] = "YES"
# Transparent huge pages for torch's large CPU allocations (>= 2 MB; torch reads this when it first allocates):
# moving a model off the GPU into fresh host memory ran at 1.1 GB/s, page-faulting 4 KB at a time, and at
# 3.8 GB/s with huge pages; Flux with low_vram on a 24 GB budget went from 32 s to 17 s an image
# (docs/MEASURED.md "Model CPU offload's copies into fresh host memory").
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

sys.path.insert(0, TOOLKIT_ROOT)

import argparse  # noqa: E402
import importlib  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import traceback  # noqa: E402

from toolkit.job import get_job  # noqa: E402


def seed_everything(value: str) -> None:
    """Honour `SEED`; torch is seeded only when it is installed, and never imported otherwise."""
    try:
        seed = int(value)
    except ValueError:
        print(f"Warning: SEED={value!r} is not an integer; not seeding")
        return
    for module_name in ("numpy", "torch"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if module_name == "numpy":
            module.random.seed(seed)
        else:
            module.manual_seed(seed)
            if module.cuda.is_available():
                module.cuda.manual_seed_all(seed)
    # Last: importing the libraries above may draw from `random`.
    random.seed(seed)


class _Tee:
    """A stream that also appends everything to a log file, flushing as it goes."""

    def __init__(self, stream, log_file):
        self._stream = stream
        self._log_file = log_file

    def write(self, data):
        self._stream.write(data)
        self._log_file.write(data)
        self._log_file.flush()
        return len(data)

    def flush(self):
        self._stream.flush()
        self._log_file.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def setup_log_to_file(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    log_file = open(path, "a", encoding="utf-8")
    sys.stdout = _Tee(sys.stdout, log_file)
    sys.stderr = _Tee(sys.stderr, log_file)


def print_end_message(jobs_completed: int, jobs_failed: int) -> None:
    print("")
    print("========================================")
    print("Result:")
    print(f" - {jobs_completed} completed job{'' if jobs_completed == 1 else 's'}")
    if jobs_failed:
        print(f" - {jobs_failed} failure{'' if jobs_failed == 1 else 's'}")
    print("========================================")


def report_to_process(job, e: BaseException) -> None:
    """Let the first process record how the job ended (it owns the UI status row)."""
    if job is None or not getattr(job, "process", None):
        return
    try:
        job.process[0].on_error(e)
    except Exception as e2:
        print(f"Error running on_error: {e2}")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run AI Toolkit job configs.")
    parser.add_argument(
        "config_file_list",
        nargs="+",
        type=str,
        help="config name (e.g. person_v1 for config/person_v1.yaml) or path; several run in order",
    )
    parser.add_argument("-r", "--recover", action="store_true", help="continue with the next config if one fails")
    parser.add_argument("-n", "--name", type=str, default=None, help="value for the [name] tag in the config")
    parser.add_argument("-l", "--log", type=str, default=None, help="also append stdout and stderr to this file")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    if os.environ.get("SEED", "").strip():
        seed_everything(os.environ["SEED"].strip())
    args = parse_args(argv)
    if args.log is not None:
        setup_log_to_file(args.log)
    # A parent that ignores SIGINT (e.g. `cmd &` in a script) must not make jobs unstoppable:
    # the UI's stop and the stop watcher both arrive as SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    count = len(args.config_file_list)
    print(f"Running {count} job{'' if count == 1 else 's'}")
    jobs_completed = jobs_failed = 0
    for config_file in args.config_file_list:
        job = None
        try:
            job = get_job(config_file, args.name)
            job.run()
            job.cleanup()
            jobs_completed += 1
        except Exception as e:
            print(f"Error running job: {e}")
            jobs_failed += 1
            report_to_process(job, e)
            if not args.recover:
                if job is None:  # a config problem: the message says it all
                    print(f"Error running job: {e}", file=sys.stderr)
                else:
                    traceback.print_exc()
                print_end_message(jobs_completed, jobs_failed)
                sys.exit(1)
        except KeyboardInterrupt as e:
            # Stopping is in progress; a second SIGINT (UI + watcher) must not cut it short.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            jobs_failed += 1
            report_to_process(job, e)
            if not args.recover:
                print("")
                print("========================================")
                print("Job stopped")
                print("========================================")
                sys.exit(0)
            signal.signal(signal.SIGINT, signal.default_int_handler)
    print_end_message(jobs_completed, jobs_failed)


if __name__ == "__main__":
    main()
