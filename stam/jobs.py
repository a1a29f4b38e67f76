"""Many small jobs, here or on a Dask distributed cluster, resumable: the one engine of every sweep
(``stam tune``, ``stam map``, ``stam synthetic sweep``).

A *job* is a pure function of a JSON-able *spec* (a dict: the algorithm, its step sizes, the seed,
...).  :func:`run_jobs` calls ``fn(spec)`` for every spec and returns the results in the order of
the specs::

    from stam.jobs import run_jobs
    results = run_jobs(run_job, specs, "runs/tune/jobs", scheduler=args.scheduler, workers=args.workers)

The job store
    Every finished job is one file ``STORE/<key>.json``, written atomically (:mod:`stam.io`) by the
    process that called :func:`run_jobs`, holding
    ``{"kind": "job-result", "spec": ..., "result": ..., "seconds": ..., "provenance": ...}``
    (``seconds``: the wall time of ``fn`` on the machine that ran it; ``provenance``: that
    machine's host name and versions, :func:`stam.io.provenance`).  The key (:func:`spec_key`) is a
    hash of the spec's canonical JSON (:func:`canonical_json`: sorted keys, no spaces), so it does
    not depend on the order of a dict's keys; ``1`` and ``1.0``, ``True`` and ``1`` are different
    specs, a tuple and a list with the same items are the same spec.  One store holds the jobs of
    one ``fn``: the key does not name the function.

Resuming
    A spec whose file exists, is a ``job-result`` and holds this very spec (compared by canonical
    JSON) is not run again: its stored result is returned.  So an interrupted run (Ctrl-C, a lost
    connection, a killed machine) is continued by running the same command again; only the jobs
    without a result are computed.  A file that is not valid JSON, of another kind, or for another
    spec is never trusted: that job is run again and the file overwritten.  Nor is a result that
    breaks the caller's ``check`` (a field of the wrong type, out of range or inconsistent with its
    spec: a score "x", a result ``{}``, a score of 1e308): one line on stderr names the file and
    the field, and the job is run again.  A store is a cache of pure functions of their specs, so
    a recomputed job gives what a clean run gives; the same ``check`` turns a freshly computed
    result that breaks it into a failed job (below), never a stored one.  A result is returned
    as it reads back from its file (``json.loads`` of what was stored), so a first run and a
    resumed run return the same thing.

Sharing a store
    Here (no scheduler), a job is claimed as it is started (one at a time, or as many as
    ``workers`` run at once, never all up front): ``STORE/<key>.claim``, created exclusively
    (``O_EXCL``), holding the claiming process's host and pid, removed when the job's result is
    stored or the run stops.  A second process on the same store skips the jobs the first has
    claimed, runs the others, and then waits for the claimed ones' results; a claim whose process
    is dead (same host, no such pid; a killed run) is taken over.  So two runs on one folder share
    the pending jobs instead of doing them twice, and return the same results.

Where the jobs run
    ``scheduler=None`` (the default): here.  ``workers=1`` runs the jobs in this process, in the
    order of the specs; ``workers=N > 1`` runs them in N local processes (joblib), storing each
    result as it comes back.  ``scheduler="tcp://HOST:PORT"`` (``HOST:PORT`` means the same):
    the jobs are submitted to that running Dask distributed scheduler (``pip install
    'stam-toolkit[cluster]'``; start one with ``dask scheduler`` and workers with ``dask worker
    tcp://HOST:PORT``) through :class:`distributed.Client`; results are gathered as they complete
    and each is stored as it arrives, so an interrupted run keeps the finished ones.  The workers
    only compute: they return the result to the client, which writes the store, so a remote
    cluster needs no shared disk.  The scheduler and the workers do need this toolkit installed
    (the same version, as every Dask cluster needs the client's environment), since ``fn`` is sent
    by reference and the scheduler unpacks the tasks; where it is missing, every job comes back
    as an error naming the deserialization.  ``workers`` counts local processes only: with a
    scheduler the cluster's workers run the jobs, and giving both is a usage error.  If the
    connection to the scheduler is lost during a run, Dask cancels every outstanding job: a
    usage error says so, and the finished results are on disk for the resume.

``fn`` must be a module-level function (picklable, and importable on the workers under the same
module name, e.g. ``stam.dnn.sweep.run_job``), taking the spec and returning a JSON-able dict.

Failures
    A job whose ``fn`` raises an exception (or returns something that is not a JSON-able dict, or
    whose worker dies) gets ``{"error": "<ExceptionType>: <message, its lines joined>"}`` in the
    returned list; nothing is stored for it, so a resumed run tries it again; the other jobs run
    on, and the caller decides what a failed job means.  Ctrl-C (:class:`KeyboardInterrupt`)
    propagates at once (on a cluster the outstanding jobs are cancelled first); every result that
    finished before it is already on disk.

Usage errors (:class:`stam.errors.UsageError`, one line), before any job runs and with nothing
written: a store that is a file, cannot be created or is not writable; a store entry
``<key>.json`` that is a folder; ``workers < 1``; a malformed scheduler address; ``distributed``
not installed; a scheduler that cannot be reached within :data:`CONNECT_TIMEOUT_S` seconds
(tried only when some job is left to run).  During a run: a scheduler lost (see above).  A spec
that is not a dict of JSON-able values is a programming error (:class:`TypeError`).  Duplicate
specs are run once and their result is returned for each.

This module imports neither torch nor dask when it is imported; joblib, tqdm and distributed are
imported when a run needs them.  :func:`add_scheduler_args` adds the two flags that every command
running jobs shares (``--scheduler ADDRESS``, ``--workers N``); :func:`stored` says which specs a
store already holds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from stam.errors import UsageError, one_line_warnings, positive_int
from stam.io import atomic_write_text, bar_disable, json_default, provenance
from stam.results import ANY, DICT, DICT_OR_NULL, NONNEG_OR_NULL, STR, ResultType, Schema

#: ``"kind"`` of a job's result file.
KIND = "job-result"
#: a job's file in the store: its spec and its result (checked further by the sweep's ``check``)
JOB_RECORD = ResultType(KIND, Schema(required={"kind": STR, "spec": ANY, "result": DICT},
                                     optional={"seconds": NONNEG_OR_NULL, "provenance": DICT_OR_NULL}),
                        files="STORE/<key>.json", writer="stam.jobs.run_jobs (stam tune, stam map, stam synthetic sweep)",
                        found=False)
#: Seconds to wait for the Dask scheduler to accept the connection before giving up.
CONNECT_TIMEOUT_S = 8.0
#: seconds between looks at jobs another process has claimed (its result, or its death)
CLAIM_POLL_S = 0.5
#: the longest a run waits on a Dask cluster without a worker (none at the start, or every one gone with jobs
#: left): then it stops with one line saying so (the finished jobs are stored)
WORKER_WAIT_S = 60.0
#: seconds between looks at a Dask run's jobs and the cluster's workers
DASK_POLL_S = 0.5
#: Hex digits of the SHA-256 of a spec's canonical JSON kept in its key (96 bits).
KEY_DIGITS = 24

_INSTALL_HINT = "install the 'cluster' extra: pip install 'stam-toolkit[cluster]'"
# tcp://HOST:PORT or HOST:PORT; HOST a name, an IPv4 address or a bracketed IPv6 address.
_ADDRESS = re.compile(r"^(?:tcp://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?):(?P<port>[0-9]{1,5})$")


def memory_limit_bytes() -> float:
    """The memory this process may allocate: the machine's physical memory, and at most its address-space limit
    (``RLIMIT_AS``, ``ulimit -v``: an allocation past it fails whatever the machine has); ``inf`` where neither is
    known (not POSIX)."""
    limits = []
    try:
        limits.append(float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(float(soft))
    except (ImportError, ValueError, OSError):
        pass
    return min(limits, default=float("inf"))


def canonical_json(spec: Any) -> str:
    """The one text of ``spec`` that its key hashes and that resuming compares: JSON with sorted
    keys and no spaces (numpy scalars and arrays as numbers and lists, paths as strings)."""
    try:
        return json.dumps(spec, sort_keys=True, separators=(",", ":"), default=json_default, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a job spec must be JSON-able: {exc}") from None


def spec_key(spec: dict) -> str:
    """A spec's stable key, the stem of its result file: the first :data:`KEY_DIGITS` hex digits
    of the SHA-256 of :func:`canonical_json`."""
    return _hash(canonical_json(spec))


def _hash(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:KEY_DIGITS]


def scheduler_address(text: str) -> str:
    """``text`` as a Dask scheduler address ``tcp://HOST:PORT`` (``HOST:PORT`` is completed with
    ``tcp://``); a :class:`UsageError` naming it otherwise."""
    match = _ADDRESS.match(text.strip()) if isinstance(text, str) else None
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise UsageError(f"--scheduler {text!r} is not a Dask scheduler address; give tcp://HOST:PORT "
                         "(e.g. tcp://127.0.0.1:8786), or leave out --scheduler to run here")
    return f"tcp://{match['host']}:{int(match['port'])}"


def _scheduler_type(text: str) -> str:
    try:
        return scheduler_address(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--scheduler ")) from None


_SCHEDULER_HELP = ("Dask distributed scheduler, e.g. tcp://127.0.0.1:8786; default: run here (needs the 'cluster' "
                   "extra; the results are stored here, workers need no shared disk)")


def add_scheduler_args(parser: argparse.ArgumentParser, workers: int = 1, aliases: tuple = ()) -> argparse.ArgumentParser:
    """Add ``--scheduler ADDRESS`` and ``--workers N`` (the arguments of :func:`run_jobs` of the
    same names; ``workers`` the default) to ``parser``, for every command that runs jobs.
    ``aliases``: older spellings of ``--workers`` a command keeps, hidden from its help."""
    from stam.params import add_field

    add_field(parser, "scheduler", scheduler_arg())
    add_field(parser, "workers", workers_arg(workers, aliases))
    return parser


def scheduler_arg():
    """``--scheduler ADDRESS`` as a field of an experiment's parameters (:func:`stam.params.arg`)."""
    from stam.params import arg

    return arg("--scheduler", metavar="ADDRESS", type=_scheduler_type, default=None, help=_SCHEDULER_HELP)


def workers_arg(workers: int | None = 1, aliases: tuple = (), help: str | None = None):
    """``--workers N`` as a field of an experiment's parameters (:func:`stam.params.arg`); ``help``:
    where a command says more than the default's text (what its processes run)."""
    from stam.params import arg

    return arg("--workers", metavar="N", type=positive_int, default=workers, old=aliases,
               help=help or f"local processes (default {workers}); not with --scheduler")


def stored(specs: list[dict], store: Path | str, check: Callable | None = None) -> list[bool]:
    """For each spec, whether ``store`` holds its result, one that passes ``check`` where given
    (what :func:`run_jobs` with that ``check`` would not run again)."""
    store = Path(store)
    out = []
    for spec in specs:
        canon = canonical_json(spec)
        path = store / f"{_hash(canon)}.json"
        out.append(path.is_file() and _load(path, canon, check) is not None)
    return out


def _one_line(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"`` on one line (its lines joined), at most 300 characters."""
    text = f"{type(exc).__name__}: {' '.join(str(exc).split())}".rstrip(": ")
    return text if len(text) <= 300 else text[:297] + "..."


def _execute(fn: Callable[[dict], dict], spec: dict) -> tuple[str, Any, float, dict | None]:
    """One job, where it runs (this process, a local worker process or a Dask worker):
    ``("ok", result, seconds, provenance)`` or ``("error", "<Type>: <line>", seconds, None)``."""
    start = time.perf_counter()
    try:
        with one_line_warnings():  # a worker process's fallbacks as the command line prints them
            result = fn(spec)
    except Exception as exc:  # noqa: BLE001 - recorded for this job, the others run on
        return "error", _one_line(exc), time.perf_counter() - start, None
    return "ok", result, time.perf_counter() - start, provenance()


def _store_record(path: Path, spec: dict, outcome: tuple, check: Callable | None = None) -> dict:
    """Write a finished job's file (in the calling process) and return the result as it reads back
    from it, or ``{"error": ...}`` (nothing written) for a failed job (one that raised, or whose
    result is not a dict or breaks ``check``)."""
    status, payload, seconds, prov = outcome
    if status != "ok":
        return {"error": payload}
    if not isinstance(payload, dict):
        return {"error": f"TypeError: the job returned {type(payload).__name__}, not a dict"}
    if check is not None:
        try:
            check(payload, spec, path)
        except (UsageError, ValueError, TypeError) as exc:
            return {"error": f"ValueError: the job's result breaks its check: {exc}"}
    record = {"kind": KIND, "spec": spec, "result": payload, "seconds": seconds, "provenance": prov}
    try:
        text = JOB_RECORD.text(record, path)  # checked against its type before it is written
    except UsageError as exc:
        return {"error": f"ValueError: the job's file would not read back: {exc}"}
    except (TypeError, ValueError) as exc:
        return {"error": f"TypeError: the job's result is not JSON-able ({exc})"}
    atomic_write_text(path, text)
    return json.loads(text)["result"]


def _load(path: Path, canonical: str, check: Callable | None = None, note: bool = False) -> dict | None:
    """The stored result of the spec whose canonical JSON is ``canonical``, or None when ``path``
    is absent, unreadable, not JSON, of another kind or for another spec, or its result breaks
    ``check(result, spec, path)`` (then it is run again; ``note``: that last case said on stderr,
    one line naming the file and the field)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        ok = (JOB_RECORD.is_kind(record) and JOB_RECORD.validate(record, path) is record
              and canonical_json(record["spec"]) == canonical)
    except (OSError, ValueError, TypeError, RecursionError, UsageError):
        return None
    if not ok:
        return None
    if check is not None:
        try:
            check(record["result"], record["spec"], path)
        except (UsageError, ValueError, TypeError) as exc:
            if note:
                print(f"stam: note: {' '.join(str(exc).split())}; that job is run again", file=sys.stderr)
            return None
    return record["result"]


def _check_store(store: Path) -> None:
    """A usage error now, before any job runs and without writing anything, unless ``store`` is a
    writable folder or can be created as one (its nearest existing ancestor is a writable folder).
    Writable means a file can be created there (a probe, removed at once): permission bits alone
    do not say it for root or on a read-only file system."""
    if store.exists() and not store.is_dir():
        raise UsageError(f"the job store {store} is a file; give a folder")
    where = store
    while not where.exists():  # the folder that the store's first new folder is created in
        where = where.parent
    if not where.is_dir():
        raise UsageError(f"the job store {store} cannot be created: {where} is a file; give a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".stam-write-test.", dir=where)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"the job store {store} cannot be written ({where}: {exc.strerror or exc}); "
                         "give a folder you can write to") from None


def _distributed():
    """The module :mod:`distributed`, or a :class:`UsageError` saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--scheduler needs dask.distributed, which is not installed; {_INSTALL_HINT}") from None
    return distributed


#: the largest first frame a Dask scheduler's handshake announces (a few hundred bytes in practice)
_HANDSHAKE_MAX = 1 << 26


def _probe_handshake(address: str) -> None:
    """A :class:`UsageError` naming ``address`` unless its first bytes are a Dask handshake: a Dask
    scheduler writes its handshake as soon as a connection is made, as an 8-byte little-endian
    frame size and the frames.  Another server (an HTTP server, a database) answers nothing, closes
    or sends bytes that, read as a size, would make the Dask client allocate exabytes (and then
    leave a client that cannot be closed); it is refused here, within :data:`CONNECT_TIMEOUT_S`."""
    import socket
    import struct

    host, _, port = address.removeprefix("tcp://").rpartition(":")
    hint = "start one with `dask scheduler` or leave out --scheduler"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S) as sock:
            head = b""
            while len(head) < 8:
                chunk = sock.recv(8 - len(head))
                if not chunk:
                    break
                head += chunk
    except socket.timeout:
        raise UsageError(f"the endpoint at {address} accepted the connection but sent no Dask handshake within "
                         f"{CONNECT_TIMEOUT_S:g} s: not a Dask scheduler; {hint}") from None
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address} ({exc.strerror or exc}); {hint}") from None
    if len(head) < 8:
        raise UsageError(f"the endpoint at {address} closed the connection without a Dask handshake: not a Dask scheduler; {hint}")
    if struct.unpack("<Q", head)[0] > _HANDSHAKE_MAX:
        raise UsageError(f"the endpoint at {address} answered {head!r}, not a Dask handshake: not a Dask scheduler "
                         f"(an HTTP server?); {hint}")


def _connect(address: str):
    """A :class:`distributed.Client` on ``address``, or a :class:`UsageError` saying why not.  The
    connection is made in a daemon thread with a hard deadline: an endpoint that accepts the
    connection and never answers (not a Dask scheduler) would otherwise keep the handshake waiting
    past its own timeout."""
    import threading

    distributed = _distributed()
    _probe_handshake(address)
    box: dict = {}

    def connect():
        try:
            box["client"] = distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except BaseException as exc:  # noqa: BLE001 - reported below, in the calling thread
            box["error"] = exc

    worker = threading.Thread(target=connect, name="stam-dask-connect", daemon=True)
    worker.start()
    worker.join(CONNECT_TIMEOUT_S + 4)
    if worker.is_alive():
        raise UsageError(f"the Dask scheduler at {address} did not answer within {CONNECT_TIMEOUT_S + 4:g} s (is it a Dask "
                         "scheduler?); start one with `dask scheduler` or leave out --scheduler")
    exc = box.get("error")
    if exc is not None:
        if isinstance(exc, (OSError, TimeoutError, ValueError, RuntimeError, MemoryError)):
            raise UsageError(f"cannot reach the Dask scheduler at {address} ({_one_line(exc)}); "
                             "start one with `dask scheduler` or leave out --scheduler") from None
        raise exc
    return box["client"]


def check_workers(scheduler: str | None, workers) -> str | None:
    """``--scheduler`` and ``--workers`` as every command takes them: ``workers`` an integer >= 1, and 1 (its
    default) with a scheduler, whose workers run the jobs; the scheduler's address (None without one)."""
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise UsageError(f"--workers {workers!r}: give an integer >= 1 (local processes)")
    if scheduler is None:
        return None
    address = scheduler_address(scheduler)
    if workers != 1:
        raise UsageError(f"--workers {workers} counts local processes; with --scheduler {address} the "
                         "cluster's workers run the jobs (leave out --workers)")
    return address


def run_jobs(fn: Callable[[dict], dict], specs: list[dict], store: Path | str, *, scheduler: str | None = None,
             workers: int = 1, progress: bool = True, desc: str = "jobs", check: Callable | None = None) -> list[dict]:
    """Run ``fn(spec) -> dict`` (JSON-able) for every spec; the results in the order of ``specs``.

    ``fn`` must be a module-level function (picklable; importable on the workers).  Each result is
    stored as ``STORE/<key>.json`` (:func:`spec_key`) by this process as soon as it arrives; a spec
    whose valid result file exists is not run again.  ``scheduler=None`` runs here
    (``workers=1``: in this process, in order; ``workers>1``: that many joblib processes);
    ``scheduler="tcp://HOST:PORT"`` submits the jobs to that Dask distributed scheduler.  A job
    that raises gives ``{"error": "<Type>: <line>"}`` (not stored).  ``check(result, spec, path)``
    raises :class:`UsageError` (naming ``path`` and the field) for a result that makes no sense: a
    stored one is run again, a fresh one is a failed job.  See the module docstring.
    """
    address = check_workers(scheduler, workers)
    if address is not None:
        _distributed()  # installed? checked before any job runs
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict):
            raise TypeError(f"job spec {i} is a {type(spec).__name__}, not a dict")
    store = Path(store)
    _check_store(store)

    canon = [canonical_json(spec) for spec in specs]
    keys = [_hash(c) for c in canon]
    unique: dict[str, int] = {}  # key -> index of its first spec
    for i, key in enumerate(keys):
        unique.setdefault(key, i)
    results: dict[str, dict] = {}
    todo: list[str] = []
    for key, i in unique.items():
        path = store / f"{key}.json"
        if path.exists() and not path.is_file():
            raise UsageError(f"the job store entry {path} is not a file; remove it")
        stored = _load(path, canon[i], check, note=True) if path.exists() else None
        if stored is None:
            todo.append(key)
        else:
            results[key] = stored

    client = _connect(address) if address is not None and todo else None  # reachable? before any job runs
    try:
        if todo:
            store.mkdir(parents=True, exist_ok=True)
        _run_todo(_Batch(fn, specs, unique, store, check, workers), todo, results, client, address, progress, desc)
    finally:
        if client is not None:
            _close(client)
    return [results[key] for key in keys]


@dataclass(frozen=True)
class _Batch:
    """The jobs of one :func:`run_jobs` call, as its helpers share them: ``fn``, the ``specs``, the
    index of each key's first spec (``unique``), the ``store``, the results' ``check`` and the local
    ``workers``."""

    fn: Callable[[dict], dict]
    specs: list[dict]
    unique: dict[str, int]
    store: Path
    check: Callable | None
    workers: int

    def spec(self, key: str) -> dict:
        return self.specs[self.unique[key]]

    def path(self, key: str) -> Path:
        return self.store / f"{key}.json"


def _run_todo(batch: _Batch, todo: list[str], results: dict, client, address: str | None, progress: bool, desc: str) -> None:
    """Run the jobs ``todo`` (keys of ``batch``) here or through ``client``, storing each result as it
    arrives and putting it into ``results``."""
    from tqdm import tqdm

    with tqdm(total=len(batch.unique), initial=len(results), desc=desc, unit="job", file=sys.stderr,
              disable=bar_disable(progress)) as bar:
        def finish(key: str, outcome: tuple) -> None:
            results[key] = _store_record(batch.path(key), batch.spec(key), outcome, batch.check)
            bar.update(1)

        def found(key: str, stored: dict) -> None:  # stored meanwhile by another process on this store
            results[key] = stored
            bar.update(1)

        if not todo:
            return
        if client is not None:
            _run_dask(batch.fn, client, address, [(key, batch.spec(key)) for key in todo], finish, len(results))
        else:
            _run_local(batch, todo, finish, found)


def _claim_path(store: Path, key: str) -> Path:
    return store / f"{key}.claim"


def _holder_alive(path: Path) -> bool:
    """Whether the process named in the claim ``path`` still runs (a claim of another host, or one
    that cannot be read, counts as alive: it is not ours to break)."""
    import socket

    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        host, pid = holder["host"], int(holder["pid"])
    except FileNotFoundError:
        return False
    except (OSError, ValueError, TypeError, KeyError):
        return True
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _claim(store: Path, key: str) -> bool:
    """Claim job ``key`` for this process (exclusive create); take over the claim of a dead
    process.  False while another live process holds it."""
    import socket

    path = _claim_path(store, key)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _holder_alive(path):
                return False
            path.unlink(missing_ok=True)  # a killed run's claim: taken over
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
        return True
    return False


def _run_local(batch: _Batch, todo: list[str], finish: Callable[[str, tuple], None], found: Callable[[str, dict], None]) -> None:
    """Run ``todo`` here, claiming jobs as they are started (module docstring, "Sharing a store"):
    one at a time with ``workers=1``, at most ``workers`` at a time in joblib processes otherwise,
    so that another process on the store finds the rest unclaimed and runs them too; the jobs
    another process holds are looked at again (its result, ``found``, or its claim taken over)
    after the free ones, every :data:`CLAIM_POLL_S` seconds when nothing else is left."""
    store, workers = batch.store, batch.workers
    pending, mine = list(todo), []
    try:
        while pending:
            ours, waiting = [], []
            for key in pending:
                if len(ours) >= workers:  # enough for this round: the rest stay free for another process
                    waiting.append(key)
                    continue
                stored = _load(batch.path(key), canonical_json(batch.spec(key)), batch.check)
                if stored is not None:
                    found(key, stored)
                elif _claim(store, key):
                    ours.append(key)
                    mine.append(key)
                else:
                    waiting.append(key)
            if workers == 1 or len(ours) <= 1:
                for key in ours:
                    finish(key, _execute(batch.fn, batch.spec(key)))
                    _claim_path(store, key).unlink(missing_ok=True)
            else:
                from joblib import Parallel, delayed

                runner = Parallel(n_jobs=min(workers, len(ours)), return_as="generator_unordered")
                for key, outcome in runner(delayed(_keyed)(key, batch.fn, batch.spec(key)) for key in ours):
                    finish(key, outcome)
                    _claim_path(store, key).unlink(missing_ok=True)
            pending = waiting
            if pending and not ours:
                time.sleep(CLAIM_POLL_S)
    finally:
        for key in mine:
            _claim_path(store, key).unlink(missing_ok=True)


def _keyed(key: str, fn: Callable[[dict], dict], spec: dict) -> tuple[str, tuple]:
    return key, _execute(fn, spec)


def _run_dask(fn, client, address: str, jobs: list[tuple[str, dict]], finish: Callable[[str, tuple], None], stored: int) -> None:
    """Submit ``jobs`` through ``client``; ``finish`` each as it completes; on the way out (also on
    Ctrl-C) cancel what has not finished, so the cluster does not compute for nobody.  A lost
    scheduler cancels every outstanding job: a :class:`UsageError` (the finished ones are stored).  Every wait is
    bounded (:class:`_Workers`): a cluster without a worker for :data:`WORKER_WAIT_S` (none at the start, or all
    gone with jobs left, a finished job's result lost with its worker too) is a :class:`UsageError` saying so; while
    a worker is there the jobs take what they take."""
    distributed = _distributed()
    futures: dict = {}
    watch = _Workers(client, address, len(jobs), stored)
    try:
        token = uuid.uuid4().hex[:8]  # task keys unique to this run (another fn may share a spec)
        name = getattr(fn, "__name__", "job")
        for key, spec in jobs:
            futures[client.submit(_execute, fn, spec, key=f"stam-{name}-{key}-{token}", pure=False)] = key
        for future in watch.completed(distributed.as_completed(list(futures), loop=client.loop)):
            key = futures[future]
            try:
                outcome = watch.result(future)
            except UsageError:
                raise
            except Exception as exc:  # noqa: BLE001 - a worker died, fn could not be unpickled there, ...
                if getattr(exc, "reason", None) == "scheduler-connection-lost" or client.status != "running":
                    raise UsageError(
                        f"lost the connection to the Dask scheduler at {address} with {watch.done} of "
                        f"{len(jobs)} jobs done; the {stored + watch.done} finished are stored: run the same command "
                        "again to resume") from None
                outcome = ("error", _one_line(exc), 0.0, None)
            finish(key, outcome)
            watch.done += 1
    finally:
        pending = [f for f in futures if not f.done()]
        if pending and client.status == "running":
            client.cancel(pending)


class _Workers:
    """The waits of a Dask run, each bounded: looking every :data:`DASK_POLL_S` seconds, a :class:`UsageError` once
    the cluster has had no worker for :data:`WORKER_WAIT_S` seconds with jobs left (``jobs`` of the run, ``done`` of
    them finished; ``stored``: how many were stored before it); the first look without a worker says on stderr
    what the run waits for."""

    def __init__(self, client, address: str, jobs: int, stored: int):
        self.client, self.address, self.jobs, self.stored = client, address, jobs, stored
        self.done = 0
        self.since = None  # when the cluster was first seen without a worker

    def completed(self, pending):
        """The futures of the ``distributed.as_completed`` ``pending`` as they complete."""
        while not pending.is_empty():
            batch = pending.next_batch(block=False)
            if batch:
                self.since = None
                yield from batch
            elif self.client.status != "running":  # the lost connection: reported by the futures it fails
                yield from pending
                return
            else:
                self.look()

    def result(self, future):
        """``future.result()``, the wait bounded as :meth:`look` bounds it (a finished job's result lost with its
        worker waits for a worker to compute it again)."""
        from distributed import TimeoutError as DaskTimeout

        while True:
            try:
                return future.result(timeout=DASK_POLL_S)
            except (DaskTimeout, TimeoutError):
                if self.client.status != "running":
                    raise
                self.look(sleep=False)

    def look(self, sleep: bool = True) -> None:
        if self.client.scheduler_info().get("workers"):
            self.since = None
        elif self.since is None:
            self.since = time.monotonic()
            print(f"stam: the Dask scheduler at {self.address} has no worker; waiting up to {WORKER_WAIT_S:g} s for one "
                  f"to run the {self.jobs - self.done} jobs left", file=sys.stderr, flush=True)
        elif time.monotonic() - self.since >= WORKER_WAIT_S:
            raise UsageError(f"the Dask scheduler at {self.address} has had no worker for {WORKER_WAIT_S:g} s with "
                             f"{self.jobs - self.done} of {self.jobs} jobs left to run (waiting for a worker to run them); "
                             f"the {self.stored + self.done} finished are stored: start workers (`dask worker "
                             f"{self.address}`) and run the same command again, or leave out --scheduler")
        if sleep:
            time.sleep(DASK_POLL_S)


def _close(client) -> None:
    """Close ``client``; after a lost scheduler without the tracebacks that distributed logs then."""
    if client.status == "running":
        client.close()
        return
    logging.disable(logging.CRITICAL)
    try:
        client.close()
    finally:
        logging.disable(logging.NOTSET)
