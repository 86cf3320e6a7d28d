"""Parameter sweeps: a grid of kernel options and topology values, each point one ``kernbench run``.

* :mod:`~kernbench.sweep.grid` reads ``--grid KEY=V1,V2,…`` into axes (each
  value typed and range-checked as its option or topology field declares it)
  and their product into points, in grid order;
* :mod:`~kernbench.sweep.point` is what goes to a worker (a point's
  ``kernbench run`` arguments) and what comes back, and
  :mod:`~kernbench.sweep.metrics` turns a run into one row of metrics;
* :mod:`~kernbench.sweep.cache` keeps finished points on disk, keyed by what
  determines their result;
* :mod:`~kernbench.sweep.executors` runs the points that are not cached (in
  this process, worker processes or on Dask);
* :mod:`~kernbench.sweep.table` writes rows as CSV or JSON and
  :mod:`~kernbench.sweep.plot` draws one metric against one swept key.

``kernbench sweep`` (:mod:`kernbench.commands.sweep`) ties them together and
holds the worker function, which runs a point through ``kernbench run``'s own
checks (:mod:`kernbench.commands.run`; the package never imports the commands).
"""
