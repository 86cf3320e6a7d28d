"""Analytic models the simulator is checked against: α–β message cost (alphabeta) and the ideal GEMM pipeline (pipeline).

They sit below the kernels (a kernel's summary prints its model prediction)
and below the studies (which sweep both)."""
