"""The real-config corpus: engine configurations with the engines' own verdicts."""
