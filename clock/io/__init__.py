"""The file edges: decoding recordings, reading logs, configs and baselines, writing outputs.

Each module reads or writes one kind of file (:mod:`~clock.io.decode`, :mod:`~clock.io.recording`,
:mod:`~clock.io.events`, :mod:`~clock.io.config`, :mod:`~clock.io.baseline`, :mod:`~clock.io.output`,
:mod:`~clock.io.serialize`), or guards them all (:mod:`~clock.io.files` reads text inputs with limits,
:mod:`~clock.io.inputs` keeps outputs off inputs, :mod:`~clock.io.sources` opens paths and URLs,
:mod:`~clock.io.terminal` makes text safe to print). :mod:`~clock.io.transforms` holds the codec transforms of
``stress``. The io layer imports the core, never :mod:`clock.run`.
"""
