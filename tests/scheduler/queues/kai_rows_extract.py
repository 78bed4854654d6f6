"""Extract the scenario rows of KAI's action tests into Python data (a dev tool, not a test).

KAI's reclaim/allocate tests are tables of Go composite literals (TestTopologyBasic: jobs,
nodes, queues, departments, expected results). This reads those literals -- only the data,
none of KAI's code -- and writes them as Python dicts for kai_scenario.py to run on the
embedded cluster:

    python -m tests.scheduler.queues.kai_rows_extract \\
        /work/ref/kai/pkg/scheduler/actions/reclaim/reclaim_test.go > rows.py

Identifiers become their values (priorities, pod states) or strings; calls such as
`test_utils.CreateFloat(2)` / `pointer.Int(1)` become their argument.
"""

from __future__ import annotations

import pprint
import re
import sys
from typing import Any

CONSTANTS = {
    "constants.PriorityTrainNumber": 50,
    "constants.PriorityBuildNumber": 100,
    "constants.PriorityInteractivePreemptibleNumber": 75,
    "constants.PriorityInferenceNumber": 125,
    "commonconstants.UnlimitedResourceQuantity": -1,
    "commonconstants.DefaultQueuePriority": 100,
    "common_info.NoMaxAllowedResource": -1,
    "true": True,
    "false": False,
    "nil": None,
}
_TOKEN = re.compile(r'\s*(?:(//[^\n]*)|("(?:[^"\\]|\\.)*")|(`[^`]*`)|([A-Za-z_][\w.]*)|'
                    r'(-?\d+(?:\.\d+)?(?:e-?\d+)?)|(\S))')


def tokens(text: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(text):
        if m.group(1):
            continue
        out.append(next(g for g in m.groups()[1:] if g is not None))
    return out


class Parser:
    def __init__(self, toks: list[str]) -> None:
        self.t, self.i = toks, 0

    def peek(self, k: int = 0) -> str:
        return self.t[self.i + k] if self.i + k < len(self.t) else ""

    def take(self) -> str:
        tok = self.t[self.i]
        self.i += 1
        return tok

    def skip_type(self) -> None:
        """A type before a composite literal: []*pkg.T, map[K]V, &pkg.T, pkg.T."""
        while self.peek() in ("&", "*", "[", "]") or self.peek().startswith("map"):
            tok = self.take()
            if tok == "map":
                self.take()  # [
                self.skip_type()
                self.take()  # key type
                self.take()  # ]
        if self.peek() not in ("{",) and re.match(r"[A-Za-z_]", self.peek()):
            self.take()

    def value(self) -> Any:
        tok = self.peek()
        if tok in ("&", "[") or tok.startswith("map") or \
                (re.match(r"[A-Za-z_][\w.]*$", tok) and self.peek(1) == "{"):
            self.skip_type()
            return self.literal()
        if tok == "{":
            return self.literal()
        self.take()
        if tok.startswith('"'):
            return bytes(tok[1:-1], "utf-8").decode("unicode_escape")
        if re.match(r"-?\d", tok):
            v: Any = float(tok) if any(c in tok for c in ".e") else int(tok)
            return self.arith(v)
        if self.peek() == "(":  # a call: keep its (last) argument
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.value())
                if self.peek() == ",":
                    self.take()
            self.take()
            return self.arith(args[-1] if args else None)
        if tok.startswith("pod_status."):
            return tok.split(".", 1)[1]
        return self.arith(CONSTANTS.get(tok, tok))

    def arith(self, v: Any) -> Any:
        while self.peek() in ("+", "-", "*") and isinstance(v, int | float):
            op = self.take()
            rhs = self.value()
            v = v + rhs if op == "+" else v - rhs if op == "-" else v * rhs
        return v

    def literal(self) -> Any:
        assert self.take() == "{", self.t[self.i - 5:self.i + 5]
        items: list[Any] = []
        keyed: dict[Any, Any] = {}
        while self.peek() != "}":
            if self.peek(1) == ":":
                key = self.take()
                self.take()
                keyed[key.strip('"')] = self.value()
            else:
                items.append(self.value())
            if self.peek() == ",":
                self.take()
        self.take()
        return keyed if keyed or not items else items


def rows(path: str) -> list[dict[str, Any]]:
    text = open(path).read()
    out = []
    for m in re.finditer(r"TestTopologyBasic:\s*test_utils\.TestTopologyBasic\{", text):
        p = Parser(tokens(text[m.end() - 1:]))
        out.append(p.literal())
    return out


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(f"# from {path}")
        pprint.pprint(rows(path), width=100, sort_dicts=False)
