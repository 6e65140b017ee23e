"""The pytest --auxcheck items and the checks they run, the Hypothesis entry-point hook, and the
one module that touches pytest's private API; the Hypothesis kernel is auxcheck._properties."""
