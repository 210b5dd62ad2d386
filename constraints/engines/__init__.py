"""Engine packs: one folder per engine (its rules by topic, the option surface of each of
its profiles, its memory terms). Packs never import each other; what holds for every
engine lives in `constraints.shared`. The engine names come from `constraints.profiles`."""
