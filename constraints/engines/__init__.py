"""Engine packs: one folder per engine (its rules, schema section, memory terms and profiles)."""
