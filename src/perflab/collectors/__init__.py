"""Collectors: where every number perflab reports is measured.

- ``process.py``      spawns the command (fork/exec), times it, and reads wait4's rusage;
- ``perf_events.py``  perf_event_open counters on the child (software always, hardware where a
                      PMU exists), whole process or the announced timed region only;
- ``region.py``       the timed-region channel (control/ack fifos) between workload and perflab;
- ``valgrind.py``     instruction counts from callgrind where no PMU exists (deterministic);
- ``workload_json.py`` the workload's own figures from its last stdout line.
"""
