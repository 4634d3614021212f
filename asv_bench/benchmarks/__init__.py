"""airspeed velocity (asv) benchmarks of votebench: kernels, the labelled layer and whole commands.

Every benchmark uses the public API (``engine.get_rule(name).kernel``, ``engine.rank``, ...) or the
command line, so that the same suite runs on older and newer commits of the project.  A case that a
commit cannot run (a rule or function it does not have) is skipped by raising ``NotImplementedError``
in ``setup``, as asv expects.
"""
