"""Write the JSON Schema of the verdict output to docs/schema/verdict.schema.json.

`python scripts/export_verdict_schema.py` (from the repository root) regenerates it from
`arbiter.report.schema.VerdictReport`; `--check` exits 1 when the file differs (the test
`tests/arbiter/report/test_verdict_schema.py` does the same).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "schema" / "verdict.schema.json"


def rendered() -> str:
    sys.path.insert(0, str(ROOT))
    from arbiter.report.schema import json_schema  # the worktree's package, not an installed one

    return json.dumps(json_schema(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    text = rendered()
    if "--check" in argv:
        current = TARGET.read_text() if TARGET.is_file() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run scripts/export_verdict_schema.py")
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
