"""Write each engine pack's detection vocabulary as data (`arbiter/engines/<engine>/vocab.json`).

Detection reads every engine's vocabulary; stored as data, it does so without importing
the packs (a check of one engine's config imports that engine's pack only). Each file is
what the pack's `vocab.vocabulary()` builds from its field lists, rendered by
`arbiter.sources.vocab_data.render`. Packs whose registry entry names a release surface
(`Entry.surface`) are read from that surface and get no file.

Run from the repository root: `python scripts/gen_vocab.py` writes the files,
`python scripts/gen_vocab.py --check` exits 1 naming the files that differ.
`tests/arbiter/sources/test_vocab_data.py` regenerates and compares.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arbiter.dialects import DIALECTS
from arbiter.sources.vocab_data import data_path, render


def wanted() -> dict[Path, str]:
    """Each stored vocabulary's path and the text it should hold."""
    return {
        data_path(name): render(DIALECTS.part(name, "vocab").vocabulary())
        for name in DIALECTS
        if not DIALECTS.entries[name].surface
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file differs")
    args = parser.parse_args(argv)
    stale = []
    for path, text in wanted().items():
        if path.is_file() and path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text)
    for path in stale:
        print(("differs: " if args.check else "wrote: ") + str(path))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
