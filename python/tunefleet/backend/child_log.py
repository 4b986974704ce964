"""The Python benchmark child's output in the worker's log format.

The worker execs its Python benchmark child with the daemon's --log-format
in TUNEFLEET_LOG_FORMAT. Under "json" (`route`), every line the child writes
to its stdout or stderr - its own messages, a kernel's prints, a C
extension's writes to fd 2, a traceback, faulthandler's dump - reaches the
worker's stderr as one JSON object with the fields of the daemon's own
lines (common/logging.cc): "time" (UTC, milliseconds), "level" ("info"; the
daemon logs each trial's outcome itself), "logger" ("bench-child") and
"message" (the line, undecodable bytes replaced).

The lines go through a pipe to a process of their own (`python -m
tunefleet.backend.child_log`), which writes them out: it outlives a child
that a fatal signal ends, so what the child said last is not lost. It
ignores SIGINT and SIGTERM and ends when every writer has closed the pipe.
"""

import datetime
import json
import os
import signal
import subprocess
import sys

LOGGER = "bench-child"


def json_line(text, logger=LOGGER, now=None):
    """One log line as the daemon's JSON formatter writes it (no newline)."""
    now = now if now is not None else datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)
    return json.dumps({"time": stamp, "level": "info", "logger": logger, "message": text},
                      ensure_ascii=False, separators=(",", ":"))


def route(logger=LOGGER):
    """Under TUNEFLEET_LOG_FORMAT=json, points fds 1 and 2 at a pipe whose
    reader writes each line as JSON to the stderr this process started
    with. Call it before anything else writes. Nothing happens in any other
    format, or when the reader cannot start (the lines stay plain)."""
    if os.environ.get("TUNEFLEET_LOG_FORMAT") != "json":
        return
    read_end, write_end = os.pipe()
    try:
        subprocess.Popen([sys.executable, "-m", "tunefleet.backend.child_log", logger],
                         stdin=read_end, stdout=2, stderr=2, close_fds=True)
    except OSError as error:
        os.close(read_end)
        os.close(write_end)
        print("bench child: log lines stay plain: %s" % error, file=sys.stderr)
        return
    os.close(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(write_end, 1)
    os.dup2(write_end, 2)
    os.close(write_end)


def main(argv):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logger = argv[1] if len(argv) > 1 else LOGGER
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        try:
            out.write(json_line(text, logger).encode("utf-8") + b"\n")
            out.flush()
        except OSError:
            return 0  # nobody reads the daemon's stderr any more
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
