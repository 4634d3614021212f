"""The app layer: the ``votebench`` command line, the HTML report and the live dashboard.

Modules here parse options, call one engine function and render its result; they hold no
statistics and no execution logic (see ARCHITECTURE.md).  :mod:`engine.app.cli` assembles the
parser from one module per sub-command in :mod:`engine.app.commands`.
"""
