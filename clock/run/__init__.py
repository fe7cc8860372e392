"""Running work over recordings: collecting a corpus, workers, caches, the stress runner, other endpointers.

:mod:`~clock.run.corpus` collects the recordings a command names and reads each once;
:mod:`~clock.run.workers` runs tasks in order on a process pool or Dask; :mod:`~clock.run.cache` keeps level traces
between runs and :mod:`~clock.run.results` the derivations beside them; :mod:`~clock.run.stress` runs
``speechclock stress``; :mod:`~clock.run.endpointers` runs the other endpointers of ``speechclock compare``.
This layer imports the core and the file edges (:mod:`clock.io`); neither imports it.
"""
