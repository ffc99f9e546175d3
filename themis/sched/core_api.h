/* themis.sched._core: the C-level API of the compiled scheduler core.
 *
 * Another extension (the FUSE data path) gets this table once, with the GIL held:
 *
 *     const themis_core_api *api = PyCapsule_Import(THEMIS_CORE_CAPSULE, 0);
 *     ts_core *core = api->from_object(scheduler);   // keep a reference to `scheduler`
 *     int32_t job = <themis.sched.Scheduler.job_handle(tag), at open time>;
 *
 * then, from any thread and without the GIL, per request chunk:
 *
 *     int64_t t = api->acquire(core, job, nbytes);   // blocks until the chunk's fair turn
 *     if (t >= 0) { ... do the I/O ...; api->release(core, t); }
 *
 * acquire/release are the C analogue of themis/sched/aio.py's Gate: one mutex per scheduler,
 * one condition variable per waiter, work-conserving, at most max_inflight chunks dispatched,
 * timed waits for the throttling dispatchers (TBF/GIFT). Per-job bytes, operations and queue
 * wait are counted here and read from Python by Scheduler.stats().
 */
#ifndef THEMIS_CORE_API_H
#define THEMIS_CORE_API_H

#include <Python.h>
#include <stdint.h>

#define THEMIS_CORE_API_VERSION 1
#define THEMIS_CORE_CAPSULE "themis.sched._core._C_API"

typedef struct ts_core ts_core; /* one compiled scheduler, opaque */

typedef struct {
    int version;
    /* GIL held: the ts_core of a compiled scheduler object (or of a themis.sched.Scheduler
     * wrapping one); NULL with a Python exception otherwise; the caller keeps a reference to
     * the object */
    ts_core *(*from_object)(PyObject *sched);
    /* any thread, GIL NOT held: queue one chunk (nbytes <= chunk_bytes) of job handle `job`
     * and block until it is dispatched; returns a ticket >= 0, or -errno */
    int64_t (*acquire)(ts_core *core, int32_t job, uint64_t nbytes);
    /* any thread, no GIL: the chunk is done (its bytes count as served) */
    void (*release)(ts_core *core, int64_t ticket);
} themis_core_api;

#endif /* THEMIS_CORE_API_H */
