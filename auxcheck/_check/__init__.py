"""The pipeline of ``auxcheck check``: the project walked once, its stages run, their findings gathered.

``auxcheck.cli.check`` reads the command line and renders what :func:`run_stages` returns;
everything between (the stages, the one listing of the project's files they share, mypy and
the contract suite run beside the other stages where the cores allow, the findings as
objects, the contract suite's results file read field by field) lives here.
"""
