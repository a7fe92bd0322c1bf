"""How the fleet's worker ends a job from its verb's exit code (never from the log's text)."""

from __future__ import annotations

import signal

import pytest

from perflab.errors import EXIT_PROBLEM, EXIT_STORE_UNREACHABLE
from perflab.fleet.worker import JobFailed, JobStopped, TransientJobError, judge_exit

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("verb, code, complete, stopping, ending", [
    ("stat", 0, True, False, None),
    ("compare", 1, True, False, None),  # --fail-on-regression's finding
    ("compare", 1, False, False, JobFailed),
    ("stat", 1, True, False, JobFailed),
    ("stat", EXIT_PROBLEM, False, False, JobFailed),
    ("run", EXIT_STORE_UNREACHABLE, False, False, TransientJobError),
    ("run", -signal.SIGKILL, False, False, TransientJobError),
    ("run", 130, False, True, JobStopped),  # SIGINT from the worker's stop
    ("run", -signal.SIGKILL, False, True, JobStopped),  # killed after the stop's grace
    ("run", EXIT_PROBLEM, False, True, JobStopped),
    ("run", 0, True, True, None),  # done as the stop came: done
])
def test_the_exit_code_decides(verb: str, code: int, complete: bool, stopping: bool,
                               ending: type[Exception] | None) -> None:
    assert judge_exit(verb, code, complete, stopping) is ending


def test_a_stop_is_transient_so_the_queue_hands_the_job_back() -> None:
    assert issubclass(JobStopped, TransientJobError)


@pytest.mark.system  # importing procrastinate runs a process
@pytest.mark.parametrize("error, ended_tries, retried", [
    (TransientJobError("lost"), 0, True),
    (TransientJobError("lost"), 1, True),
    (TransientJobError("lost"), 2, False),  # the third try was the last
    (JobStopped("stopped"), 0, True),
    (JobStopped("stopped"), 7, True),  # a stop hands the job back whatever its tries
    (JobFailed("exit 2"), 0, False),
])
def test_the_queue_retries_a_transient_try_up_to_three_and_a_stop_always(
        error: Exception, ended_tries: int, retried: bool) -> None:
    from types import SimpleNamespace

    from perflab.fleet.worker import retry_policy

    job = SimpleNamespace(attempts=ended_tries)
    assert (retry_policy(3).get_retry_exception(exception=error, job=job) is not None) == retried
