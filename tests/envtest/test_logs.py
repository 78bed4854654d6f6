"""Finding tracebacks in the logs of processes under test."""

import json

from phalanx.envtest import find_tracebacks

TEXT = """\
2026-01-01 INFO  phalanx: started
2026-01-01 ERROR phalanx.scheduler: cycle crashed
Traceback (most recent call last):
  File "x.py", line 1, in f
    g()
UnboundLocalError: cannot access local variable 'result'
2026-01-01 INFO  phalanx: still running
"""


def test_text_tracebacks_end_at_the_exception_line():
    found = find_tracebacks(TEXT)
    assert len(found) == 1
    assert found[0].startswith("Traceback (most recent call last):")
    assert found[0].endswith("UnboundLocalError: cannot access local variable 'result'")


def test_json_log_records_carrying_a_traceback():
    record = {"level": "error", "msg": "boom",
              "exc_info": "Traceback (most recent call last):\n  File \"y.py\", line 2\n"
                          "ValueError: bad"}
    log = json.dumps({"level": "info", "msg": "ok"}) + "\n" + json.dumps(record) + "\n"
    assert find_tracebacks(log) == [
        'Traceback (most recent call last):\n  File "y.py", line 2\nValueError: bad']


def test_a_clean_log_has_none():
    assert find_tracebacks("INFO ready\nWARNING slow\n") == []
