"""The pytest --auxcheck items, the Hypothesis hook, and the one module that touches pytest's private API."""
