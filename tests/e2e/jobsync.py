"""The handshake of the Python test jobs with their bats tests, in one place: a job writes its
ready file (and its result file) whole, written aside then renamed, so a test never reads half
of one; it waits for the go file the test creates once the tracer is attached, and at the end
may linger until the test lets it go."""
import os
import sys
import time


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def wait_file(path, timeout, who=None, poll=0.01):
    """Until PATH exists: True; False after TIMEOUT seconds (said on stderr as WHO's, if
    given)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            if who:
                print(f"{who}: no {path}", file=sys.stderr)
            return False
        time.sleep(poll)
    return True
