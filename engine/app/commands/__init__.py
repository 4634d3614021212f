"""One module per ``votebench`` sub-command.

Each module defines ``NAME`` (the sub-command), ``HELP`` (its line in ``votebench --help``),
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code); it may define ``DESCRIPTION``
and ``EPILOG`` for its own ``--help``.  :data:`engine.app.cli.COMMANDS` lists them in the order of
``votebench --help``.  A module imports what its command runs inside ``run``, so that building the
parser stays cheap.
"""
