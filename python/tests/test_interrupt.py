"""Ctrl-C during compute(): SIGINT sent to a child process mid-compute cancels the
computation within a second, raises KeyboardInterrupt, and leaves the interpreter usable
(the child computes again and exits cleanly). The engines' side of cancelling (no task
starts after the token is cancelled, for arrays and dataframe stages) is tested in Rust,
`tests/integration/cancel.rs`."""

import signal
import subprocess
import sys
import time

CHILD = r"""
import sys, time
import tessera as ts

# Minutes of work on 2 cores (4e10 normal draws in 10,000 tasks of a few ms), summed.
work = ts.random.RandomState(0).normal(size=(200_000, 200_000), chunks=2_000).sum()
print("started", flush=True)
t0 = time.monotonic()
try:
    work.compute()
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"interrupted {time.monotonic():.6f}", flush=True)
# Usable afterwards.
assert int(ts.arange(10).sum().compute()) == 45
print("usable", flush=True)
"""


def run_and_interrupt(delay):
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return sent, out, err, proc.returncode


def test_ctrl_c_cancels_an_array_compute_within_a_second():
    sent, out, err, rc = run_and_interrupt(1.0)
    lines = out.split()
    assert "interrupted" in lines, f"not interrupted: {out!r} {err!r}"
    # time.monotonic is system-wide on Linux, so the two processes' clocks compare.
    when = float(lines[lines.index("interrupted") + 1])
    assert when - sent < 1.0, f"KeyboardInterrupt came {when - sent:.3f} s after SIGINT"
    assert "usable" in lines and rc == 0, err
