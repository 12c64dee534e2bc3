"""One BLAS thread: scipy's interpolators are slower, not faster, with threads on small CI
machines (measured: a 48-query lookup went from ~0.1 s to 15 s under contention)."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
