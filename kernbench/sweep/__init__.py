"""Parameter sweeps: a grid of kernel options and topology values, each point one ``kernbench run``.

* :mod:`~kernbench.sweep.grid` reads ``--grid KEY=V1,V2,…`` into axes (each
  value typed and range-checked as its option or topology field declares it)
  and their product into points, in grid order;
* :mod:`~kernbench.sweep.point` runs one point (in this process, a worker
  process or a Dask worker) and :mod:`~kernbench.sweep.metrics` turns its run
  into one row of metrics;
* :mod:`~kernbench.sweep.cache` keeps finished points on disk, keyed by what
  determines their result;
* :mod:`~kernbench.sweep.executors` runs the points that are not cached;
* :mod:`~kernbench.sweep.table` writes rows as CSV or JSON and
  :mod:`~kernbench.sweep.plot` draws one metric against one swept key.

``kernbench sweep`` (:mod:`kernbench.commands.sweep`) ties them together.
"""
