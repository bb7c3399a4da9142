"""Inside the container: ``python -m magpie_env_container.call CALL.pkl RESULT.pkl``.

Unpickles ``(fn, item)``, runs ``fn(item)`` and pickles the result (or the
exception it raised) next to it. Both files live in a folder mounted at the
same path inside and outside the container.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path


def main(call_path: str, result_path: str) -> int:
    fn, item = pickle.loads(Path(call_path).read_bytes())
    try:
        result = fn(item)
    except Exception as exc:  # reported to the host as this item's result
        result = exc
    Path(result_path).write_bytes(pickle.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
