"""The Python benchmark child's output in the worker's JSON log format
(python/tunefleet/backend/child_log.py): every line it writes, through any
fd and up to a fatal signal, reaches the daemon's stderr as a JSON object
with the fields of the daemon's own lines."""

import json
import os
import subprocess
import sys
import textwrap

FIELDS = {"time", "level", "logger", "message"}


def run(code, log_format):
    env = dict(os.environ, TUNEFLEET_LOG_FORMAT=log_format)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


def json_lines(stream):
    lines = stream.decode("utf-8").splitlines()
    records = [json.loads(line) for line in lines]  # every line parses
    for record in records:
        assert set(record) == FIELDS, record
        assert record["level"] == "info" and record["logger"] == "bench-child"
        assert record["time"].endswith("Z") and len(record["time"]) == 24, record["time"]
    return [record["message"] for record in records]


def test_every_line_of_every_fd_is_json_up_to_a_fatal_signal():
    result = run("""
        import os, sys
        from tunefleet.backend import child_log
        child_log.route()
        print("from print")
        print("from stderr, \\"quoted\\" \\u00e9", file=sys.stderr)
        sys.stdout.flush()
        os.write(2, b"an fd write\\n\\xff undecodable\\n")
        os.write(1, b"no newline at the end")
        os.kill(os.getpid(), 9)
    """, "json")
    assert result.returncode == -9
    assert result.stdout == b""
    messages = json_lines(result.stderr)
    assert messages == ["from print", 'from stderr, "quoted" \u00e9', "an fd write",
                        "\ufffd undecodable", "no newline at the end"]


def test_text_format_leaves_the_lines_plain():
    result = run("""
        import sys
        from tunefleet.backend import child_log
        child_log.route()
        print("plain", file=sys.stderr)
    """, "text")
    assert result.returncode == 0
    assert result.stderr == b"plain\n"


def test_the_bench_child_says_why_it_cannot_serve_in_json():
    # On a host without torch or a GPU the child refuses to serve; what it
    # says is a JSON line (on a GPU host it serves until stdin closes).
    env = dict(os.environ, TUNEFLEET_LOG_FORMAT="json", CUDA_VISIBLE_DEVICES="")
    result = subprocess.run([sys.executable, "-m", "tunefleet.backend.bench_child"], env=env,
                            stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    messages = json_lines(result.stderr)
    assert messages, result
    assert any("bench child:" in message for message in messages), messages
