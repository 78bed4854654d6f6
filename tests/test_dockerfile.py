"""The image opens the ports the services listen on (issue 25 item 15)."""

import re
from pathlib import Path

from phalanx import ports

DOCKERFILE = Path(__file__).resolve().parents[1] / "Dockerfile"


def test_expose_lists_every_default_port_and_nothing_else() -> None:
    exposed = {int(p) for line in DOCKERFILE.read_text().splitlines()
               if line.startswith("EXPOSE") for p in re.findall(r"\d+", line)}
    wanted = {v for k, v in vars(ports).items() if k.endswith("_PORT")}
    assert exposed == wanted == {2750, 2751, 2752, 2753, 2754}
