"""Tests of one engine pack in `constraints/engines/`."""
