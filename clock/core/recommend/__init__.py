"""The recommendation engine: derive the floor, the quiet time and the onset timeout from recordings, with evidence.

Pure numpy. ``derive``, ``sweep``, ``report``, the notebook and the API all
call :func:`clock.core.recommend.engine.derive`. One recording is an
observation, not a claim: every number carries the count it rests on, which
recording drives it and what it would be without it, and the recommended
setting is replayed over the whole corpus before it is returned. The method
is told in :mod:`clock.core.recommend.engine`. Each idea has its file:

``windows``      per recording: its ticks told apart without a floor, its levels and its window of floors
``floor_math``   the arithmetic of floors: dB, two-digit floors in a window, ladders, a floor in other units
``corpus``       what the engine reads once per recording and shares (:class:`~.corpus.Corpus`), and at one floor
``search``       the candidate floors tried, nearest the preferred one, for a setting that ends every beat right
``quiet``        the quiet time: the longest gap plus the margin within the room the beats leave, and its evidence
``onset``        the onset timeout: the longest latency plus the margin, and its evidence
``grid``         one floor of the replayed grid: the quiet times and onset timeouts it allows
``margin``       the one margin policy a setting inside the valid region is ranked by, and compare's grid chooser
``region``       derive's chooser of a setting inside the valid region by that policy, on its replayed grid
``floor``        the run of floors that end every beat right around a setting, where the floor goes in it, and the
                 floor's evidence
``replay``       a setting replayed over the corpus and counted (the one judge of a corpus: :func:`~.replay.judge`)
``notes``        what derive says of recordings without a window, and what ``check`` will make of them
``heldout``      out of sample: each recording left out in turn, and the number without its driving recording
``rules``        dead air, and the rules on the provider's event replayed on the same beats
``rule_evidence`` the rules compared and the one named, held out
``rule_choice``  whether derive names a rule: held out per recording and per metadata group, and at the committed
                 setting
``evidence``     the results derive returns (:class:`~.evidence.Derivation` and its parts)
``engine``       :func:`~.engine.derive` itself: the steps above in order
"""
