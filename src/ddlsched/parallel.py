"""Run one function over many items on worker processes, results in input order.

Shared by the experiment runner and ``ddlsched sweep`` (both run whole simulations per item);
it sits in the bottom layer and imports nothing of ddlsched.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (no stray tracebacks); SIGTERM
    (what ``Pool.terminate`` sends) ends them at once, whatever handler the parent had."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _indexed(fn, pair):
    """``(i, fn(item))``: lets results arrive in any order and still land in their place."""
    i, item = pair
    return i, fn(item)


def handout_order(items, cost=None) -> list:
    """``(index, item)`` pairs in the order workers are handed them: costliest first where
    ``cost`` is given (stable: ties keep input order), input order otherwise."""
    order = list(enumerate(items))
    if cost is not None:
        order.sort(key=lambda pair: -cost(pair[1]))
    return order


def map_in_processes(fn, items, workers, progress, on_result=None, cost=None):
    """``[fn(x) for x in items]`` on ``workers`` processes (default: all cores), in input
    order; ``on_result(i, r)`` sees each result as soon as it arrives (e.g. to save it, so an
    interrupted sweep keeps what finished). ``cost(x)``, an estimate of an item's run time,
    hands the items out longest first (a shorter tail when a few items dominate); the
    results are the same and in input order either way."""
    n = workers if workers is not None else (os.cpu_count() or 1)
    done = 0
    results = [None] * len(items)
    if n <= 1 or len(items) <= 1:
        for i, it in enumerate(items):
            results[i] = fn(it)
            if on_result:
                on_result(i, results[i])
            done += 1
            if progress:
                progress(done, len(items))
        return results
    pool = multiprocessing.Pool(processes=min(n, len(items)), initializer=_worker_init)
    try:
        # results are placed by index: the returned list does not depend on the worker count
        order = handout_order(items, cost)
        for i, r in pool.imap_unordered(functools.partial(_indexed, fn), order):
            results[i] = r
            if on_result:
                on_result(i, r)
            done += 1
            if progress:
                progress(done, len(items))
        pool.close()
    except BaseException:
        pool.terminate()  # Ctrl-C or an error: stop the workers now, write nothing
        raise
    finally:
        pool.join()
    return results
