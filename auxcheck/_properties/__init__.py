"""The Hypothesis kernel: strategies, properties and the state machine, run without pytest."""
