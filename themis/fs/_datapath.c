/* The compiled data path of the Themis mount: FUSE read, write, flush, fsync and fallocate of
 * open files, served by a pool of C threads without the GIL.
 *
 * pyfuse3 keeps receiving every request in its trio loop; install() puts this module's
 * handlers into the session's libfuse operation table (found by themis/fs/lowlevel.py), so for
 * those operations the loop only queues the request here and goes on. Python registers each
 * open file (fh -> descriptor opened as the caller, job handle) at open/create and drops it at
 * release; no path is ever resolved here. A worker takes a request, waits for each chunk's fair
 * turn from the scheduler core (themis_core_api.acquire), runs pread/pwrite on the descriptor,
 * holds the turn for the emulated device time when device emulation is on, releases it and
 * replies. Per-job bytes, operations and queue wait are counted here and read at scrape time.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#if __has_include("../sched/core_api.h")
#include "../sched/core_api.h"
#else
#include "_core_standin.h"
#endif

#define NBUCKETS 4096
#define MAX_THREADS 1024

/* -- per-job counters and open files ------------------------------------------------------ */

typedef struct jobstat {
    int32_t job;
    int files; /* open files that point here (under tab_lock) */
    _Atomic uint64_t rbytes, wbytes, rops, wops, wait_ns;
    struct jobstat *next;
} jobstat;

typedef struct dfile {
    uint64_t fh;
    int fd;
    int refs; /* queued or running requests (under tab_lock) */
    jobstat *js;
    struct dfile *next;
} dfile;

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tab_idle = PTHREAD_COND_INITIALIZER;
static dfile *files[NBUCKETS];
static jobstat *jobs[NBUCKETS];

static unsigned bucket(uint64_t key) { return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 52); }

static jobstat *job_get(int32_t job, int create) /* tab_lock held */
{
    jobstat **at = &jobs[bucket((uint32_t)job)];
    for (jobstat *j = *at; j; j = j->next)
        if (j->job == job)
            return j;
    if (!create)
        return NULL;
    jobstat *j = calloc(1, sizeof *j);
    if (j) {
        j->job = job;
        j->next = *at;
        *at = j;
    }
    return j;
}

static dfile *file_ref(uint64_t fh)
{
    pthread_mutex_lock(&tab_lock);
    dfile *f = files[bucket(fh)];
    while (f && f->fh != fh)
        f = f->next;
    if (f)
        f->refs++;
    pthread_mutex_unlock(&tab_lock);
    return f;
}

static void file_unref(dfile *f)
{
    pthread_mutex_lock(&tab_lock);
    if (--f->refs == 0)
        pthread_cond_broadcast(&tab_idle);
    pthread_mutex_unlock(&tab_lock);
}

/* -- the fair turn: the scheduler core, or the stand-in gate ------------------------------- */

static const themis_core_api *api;
static ts_core *core;
static PyObject *core_owner; /* keeps the scheduler object alive */
static uint64_t chunk_bytes = 1 << 20;

/* -- device-rate emulation (themis/fs/device.py, shared_device.py) ------------------------ */

static double dev_bandwidth;
static int dev_fd = -1;
static double dev_free_at;
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Occupy the emulated device for nbytes (after the syscall, holding the turn). */
static void occupy(uint64_t nbytes)
{
    if (dev_bandwidth <= 0)
        return;
    double end, now = now_mono();
    if (dev_fd >= 0) { /* one device shared by several daemons: its free time in a file */
        double free_at = 0;
        flock(dev_fd, LOCK_EX);
        if (pread(dev_fd, &free_at, sizeof free_at, 0) != (ssize_t)sizeof free_at)
            free_at = 0;
        end = (free_at > now ? free_at : now) + (double)nbytes / dev_bandwidth;
        if (pwrite(dev_fd, &end, sizeof end, 0) != (ssize_t)sizeof end)
            end = now;
        flock(dev_fd, LOCK_UN);
    } else {
        pthread_mutex_lock(&dev_lock);
        end = (dev_free_at > now ? dev_free_at : now) + (double)nbytes / dev_bandwidth;
        dev_free_at = end;
        pthread_mutex_unlock(&dev_lock);
    }
    struct timespec ts = {(time_t)end, (long)((end - (double)(time_t)end) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Wait for one chunk's turn; adds the wait to the job's counter. */
static int64_t turn(dfile *f, uint64_t nbytes)
{
    uint64_t t0 = now_ns();
    int64_t ticket = api->acquire(core, f->js->job, nbytes);
    atomic_fetch_add_explicit(&f->js->wait_ns, now_ns() - t0, memory_order_relaxed);
    return ticket;
}

/* -- requests and workers ----------------------------------------------------------------- */

enum { OP_READ, OP_WRITE, OP_FLUSH, OP_FSYNC, OP_FALLOCATE };

typedef struct dreq {
    int op;
    int arg; /* fsync: datasync; fallocate: mode */
    fuse_req_t req;
    dfile *f;
    off_t off;
    size_t size; /* read: bytes asked; write: bytes in buf; fallocate: length */
    char *buf;   /* write: the data (owned) */
    struct dreq *next;
} dreq;

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static dreq *q_head, *q_tail;
static int stopping;
static pthread_t threads[MAX_THREADS];
static int nthreads;
static _Atomic uint64_t served; /* requests the workers answered (for tests) */

static void enqueue(dreq *r)
{
    pthread_mutex_lock(&q_lock);
    r->next = NULL;
    if (q_tail)
        q_tail->next = r;
    else
        q_head = r;
    q_tail = r;
    pthread_cond_signal(&q_cond);
    pthread_mutex_unlock(&q_lock);
}

static void do_read(dreq *r, char **buf, size_t *cap)
{
    if (r->size > *cap) {
        char *grown = realloc(*buf, r->size);
        if (!grown) {
            fuse_reply_err(r->req, ENOMEM);
            return;
        }
        *buf = grown;
        *cap = r->size;
    }
    size_t done = 0;
    int err = 0;
    while (done < r->size) {
        size_t n = r->size - done < chunk_bytes ? r->size - done : chunk_bytes;
        int64_t ticket = turn(r->f, n);
        if (ticket < 0) {
            err = (int)-ticket;
            break;
        }
        ssize_t got = pread(r->f->fd, *buf + done, n, r->off + (off_t)done);
        if (got < 0)
            err = errno;
        else {
            occupy((uint64_t)got);
            done += (size_t)got;
        }
        api->release(core, ticket);
        if (got < (ssize_t)n) /* end of file or error */
            break;
    }
    if (err && done == 0) {
        fuse_reply_err(r->req, err);
        return;
    }
    jobstat *js = r->f->js;
    atomic_fetch_add_explicit(&js->rbytes, done, memory_order_relaxed);
    atomic_fetch_add_explicit(&js->rops, 1, memory_order_relaxed);
    fuse_reply_buf(r->req, *buf, done);
}

static void do_write(dreq *r)
{
    size_t done = 0;
    int err = 0;
    while (done < r->size && !err) {
        size_t n = r->size - done < chunk_bytes ? r->size - done : chunk_bytes;
        int64_t ticket = turn(r->f, n);
        if (ticket < 0) {
            err = (int)-ticket;
            break;
        }
        size_t put = 0;
        while (put < n) {
            ssize_t w = pwrite(r->f->fd, r->buf + done + put, n - put, r->off + (off_t)(done + put));
            if (w <= 0) {
                err = w < 0 ? errno : EIO;
                break;
            }
            put += (size_t)w;
        }
        occupy(put);
        api->release(core, ticket);
        done += put;
    }
    if (err && done == 0) {
        fuse_reply_err(r->req, err);
        return;
    }
    jobstat *js = r->f->js;
    atomic_fetch_add_explicit(&js->wbytes, done, memory_order_relaxed);
    atomic_fetch_add_explicit(&js->wops, 1, memory_order_relaxed);
    fuse_reply_write(r->req, done);
}

static void run(dreq *r, char **buf, size_t *cap)
{
    int fd = r->f->fd, err = 0;
    switch (r->op) {
    case OP_READ:
        do_read(r, buf, cap);
        break;
    case OP_WRITE:
        do_write(r);
        break;
    case OP_FLUSH: { /* close() semantics of the backing store */
        int dup_fd = dup(fd);
        err = dup_fd < 0 ? errno : (close(dup_fd) < 0 ? errno : 0);
        fuse_reply_err(r->req, err);
        break;
    }
    case OP_FSYNC:
        err = (r->arg ? fdatasync(fd) : fsync(fd)) < 0 ? errno : 0;
        fuse_reply_err(r->req, err);
        break;
    case OP_FALLOCATE:
        err = fallocate(fd, r->arg, r->off, (off_t)r->size) < 0 ? errno : 0;
        fuse_reply_err(r->req, err);
        break;
    }
    atomic_fetch_add_explicit(&served, 1, memory_order_relaxed);
}

static void *worker(void *unused)
{
    (void)unused;
    char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&q_lock);
        while (!q_head && !stopping)
            pthread_cond_wait(&q_cond, &q_lock);
        dreq *r = q_head;
        if (!r) { /* stopping and drained */
            pthread_mutex_unlock(&q_lock);
            break;
        }
        q_head = r->next;
        if (!q_head)
            q_tail = NULL;
        pthread_mutex_unlock(&q_lock);
        run(r, &buf, &cap);
        file_unref(r->f);
        free(r->buf);
        free(r);
    }
    free(buf);
    return NULL;
}

/* -- libfuse handlers (called in pyfuse3's receive loop, GIL held: queue and return) ------- */

static dreq *request(fuse_req_t req, struct fuse_file_info *fi, int op)
{
    dfile *f = file_ref(fi->fh);
    if (!f) {
        fuse_reply_err(req, EBADF);
        return NULL;
    }
    dreq *r = calloc(1, sizeof *r);
    if (!r) {
        file_unref(f);
        fuse_reply_err(req, ENOMEM);
        return NULL;
    }
    r->op = op;
    r->req = req;
    r->f = f;
    return r;
}

static void h_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)ino;
    dreq *r = request(req, fi, OP_READ);
    if (!r)
        return;
    r->off = off;
    r->size = size;
    enqueue(r);
}

static void h_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
                        struct fuse_file_info *fi)
{
    (void)ino;
    dreq *r = request(req, fi, OP_WRITE);
    if (!r)
        return;
    size_t size = fuse_buf_size(in);
    /* the receive buffer (or splice pipe) is reused by the next request: copy the data out */
    r->buf = malloc(size ? size : 1);
    struct fuse_bufvec out = FUSE_BUFVEC_INIT(size);
    out.buf[0].mem = r->buf;
    ssize_t got = r->buf ? fuse_buf_copy(&out, in, 0) : -ENOMEM;
    if (got < 0 || (size_t)got != size) {
        fuse_reply_err(req, got < 0 ? (int)-got : EIO);
        file_unref(r->f);
        free(r->buf);
        free(r);
        return;
    }
    r->off = off;
    r->size = size;
    enqueue(r);
}

static void h_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    dreq *r = request(req, fi, OP_FLUSH);
    if (r)
        enqueue(r);
}

static void h_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    dreq *r = request(req, fi, OP_FSYNC);
    if (!r)
        return;
    r->arg = datasync;
    enqueue(r);
}

static void h_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t length,
                        struct fuse_file_info *fi)
{
    (void)ino;
    dreq *r = request(req, fi, OP_FALLOCATE);
    if (!r)
        return;
    r->arg = mode;
    r->off = off;
    r->size = (size_t)length;
    enqueue(r);
}

/* -- kernel options at INIT: pyfuse3's init, then ours ------------------------------------- */

static void (*py_init)(void *, struct fuse_conn_info *);
static unsigned opt_max_write, opt_max_readahead, opt_max_background;
static int opt_writeback, opt_splice;

static void h_init(void *userdata, struct fuse_conn_info *conn)
{
    py_init(userdata, conn);
    if (opt_max_write)
        conn->max_write = opt_max_write;
    if (opt_max_readahead)
        conn->max_readahead = opt_max_readahead;
    if (opt_max_background)
        conn->max_background = opt_max_background;
    if (opt_writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
        conn->want |= FUSE_CAP_WRITEBACK_CACHE;
    if (!opt_splice)
        conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
                                  FUSE_CAP_SPLICE_MOVE);
}

/* -- Python interface ---------------------------------------------------------------------- */

static PyObject *py_configure(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"scheduler", "chunk_bytes", "bandwidth", "shared_fd", NULL};
    PyObject *sched;
    unsigned long long chunk;
    double bandwidth;
    int shared_fd;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OKdi", names, &sched, &chunk, &bandwidth,
                                     &shared_fd))
        return NULL;
    if (nthreads) {
        PyErr_SetString(PyExc_RuntimeError, "configure before start");
        return NULL;
    }
    if (chunk < 4096) {
        PyErr_SetString(PyExc_ValueError, "chunk_bytes must be at least 4096");
        return NULL;
    }
#ifdef THEMIS_CORE_STANDIN
    const themis_core_api *a = &standin_api;
#else
    const themis_core_api *a = PyCapsule_Import(THEMIS_CORE_CAPSULE, 0);
#endif
    if (!a)
        return NULL;
    if (a->version != THEMIS_CORE_API_VERSION) {
        PyErr_Format(PyExc_RuntimeError, "scheduler core API version %d, expected %d",
                     a->version, THEMIS_CORE_API_VERSION);
        return NULL;
    }
    ts_core *c = a->from_object(sched);
    if (!c)
        return NULL;
    Py_INCREF(sched);
    Py_XSETREF(core_owner, sched);
    api = a;
    core = c;
    chunk_bytes = chunk;
    dev_bandwidth = bandwidth;
    dev_fd = shared_fd;
    Py_RETURN_NONE;
}

static PyObject *py_set_kernel_options(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"max_write", "max_readahead", "max_background", "writeback_cache",
                            "splice", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "IIIpp", names, &opt_max_write, &opt_max_readahead,
                                     &opt_max_background, &opt_writeback, &opt_splice))
        return NULL;
    Py_RETURN_NONE;
}

/* Put the handlers into the libfuse operation table at `table` (before FUSE INIT). */
static PyObject *py_install(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long addr;
    if (!PyArg_ParseTuple(args, "K", &addr))
        return NULL;
    if (!core) {
        PyErr_SetString(PyExc_RuntimeError, "configure first");
        return NULL;
    }
    struct fuse_lowlevel_ops *ops = (struct fuse_lowlevel_ops *)(uintptr_t)addr;
    if (!ops->init || !ops->lookup || !ops->write_buf) {
        PyErr_SetString(PyExc_ValueError, "not pyfuse3's operation table");
        return NULL;
    }
    if (ops->init != h_init) {
        py_init = ops->init;
        ops->init = h_init;
    }
    ops->read = h_read;
    ops->write_buf = h_write_buf;
    ops->flush = h_flush;
    ops->fsync = h_fsync;
    ops->fallocate = h_fallocate;
    Py_RETURN_NONE;
}

static PyObject *py_start(PyObject *self, PyObject *args)
{
    (void)self;
    int n;
    if (!PyArg_ParseTuple(args, "i", &n))
        return NULL;
    if (n < 1 || n > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be 1..%d", MAX_THREADS);
        return NULL;
    }
    if (nthreads) {
        PyErr_SetString(PyExc_RuntimeError, "already started");
        return NULL;
    }
    stopping = 0;
    for (int i = 0; i < n; i++) {
        int err = pthread_create(&threads[i], NULL, worker, NULL);
        if (err) {
            nthreads = i;
            errno = err;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    nthreads = n;
    Py_RETURN_NONE;
}

static PyObject *py_stop(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&q_lock);
    stopping = 1;
    pthread_cond_broadcast(&q_cond);
    pthread_mutex_unlock(&q_lock);
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    Py_END_ALLOW_THREADS;
    nthreads = 0;
    Py_RETURN_NONE;
}

static PyObject *py_register(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long fh;
    int fd, job;
    if (!PyArg_ParseTuple(args, "Kii", &fh, &fd, &job))
        return NULL;
    dfile *f = calloc(1, sizeof *f);
    if (!f)
        return PyErr_NoMemory();
    f->fh = fh;
    f->fd = fd;
    pthread_mutex_lock(&tab_lock);
    f->js = job_get(job, 1);
    if (f->js) {
        f->js->files++;
        dfile **at = &files[bucket(fh)];
        f->next = *at;
        *at = f;
    }
    pthread_mutex_unlock(&tab_lock);
    if (!f->js) {
        free(f);
        return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

/* Drop fh; returns once no request uses its descriptor (the caller then closes it). */
static PyObject *py_unregister(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long fh;
    if (!PyArg_ParseTuple(args, "K", &fh))
        return NULL;
    dfile *f = NULL;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&tab_lock);
    for (dfile **at = &files[bucket(fh)]; *at; at = &(*at)->next)
        if ((*at)->fh == fh) {
            f = *at;
            *at = f->next;
            break;
        }
    while (f && f->refs)
        pthread_cond_wait(&tab_idle, &tab_lock);
    if (f)
        f->js->files--;
    pthread_mutex_unlock(&tab_lock);
    Py_END_ALLOW_THREADS;
    free(f);
    return PyBool_FromLong(f != NULL);
}

static PyObject *py_job_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *out = PyDict_New();
    if (!out)
        return NULL;
    pthread_mutex_lock(&tab_lock);
    for (int b = 0; b < NBUCKETS; b++)
        for (jobstat *j = jobs[b]; j; j = j->next) {
            PyObject *v = Py_BuildValue(
                "(KKKKd)", (unsigned long long)atomic_load(&j->rbytes),
                (unsigned long long)atomic_load(&j->wbytes),
                (unsigned long long)atomic_load(&j->rops),
                (unsigned long long)atomic_load(&j->wops), atomic_load(&j->wait_ns) * 1e-9);
            PyObject *k = PyLong_FromLong(j->job);
            if (!v || !k || PyDict_SetItem(out, k, v) < 0) {
                Py_XDECREF(v);
                Py_XDECREF(k);
                pthread_mutex_unlock(&tab_lock);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(v);
            Py_DECREF(k);
        }
    pthread_mutex_unlock(&tab_lock);
    return out;
}

/* Drop a finished job's counters (kept while one of its files is open). */
static PyObject *py_forget_job(PyObject *self, PyObject *args)
{
    (void)self;
    int job, gone = 0;
    if (!PyArg_ParseTuple(args, "i", &job))
        return NULL;
    pthread_mutex_lock(&tab_lock);
    for (jobstat **at = &jobs[bucket((uint32_t)job)]; *at; at = &(*at)->next)
        if ((*at)->job == job) {
            jobstat *j = *at;
            if (j->files == 0) {
                *at = j->next;
                free(j);
                gone = 1;
            }
            break;
        }
    pthread_mutex_unlock(&tab_lock);
    return PyBool_FromLong(gone);
}

static PyObject *py_served(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromUnsignedLongLong(atomic_load(&served));
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))py_configure, METH_VARARGS | METH_KEYWORDS,
     "configure(scheduler, chunk_bytes, bandwidth, shared_fd): the fair turn and the device"},
    {"set_kernel_options", (PyCFunction)(void (*)(void))py_set_kernel_options,
     METH_VARARGS | METH_KEYWORDS,
     "set_kernel_options(max_write, max_readahead, max_background, writeback_cache, splice)"},
    {"install", py_install, METH_VARARGS, "install(table_address): take over the data ops"},
    {"start", py_start, METH_VARARGS, "start(threads): start the worker threads"},
    {"stop", py_stop, METH_NOARGS, "stop(): finish queued requests and join the workers"},
    {"register", py_register, METH_VARARGS, "register(fh, fd, job): an open file"},
    {"unregister", py_unregister, METH_VARARGS,
     "unregister(fh) -> bool: drop an open file once no request uses it"},
    {"job_stats", py_job_stats, METH_NOARGS,
     "job_stats() -> {job: (read bytes, write bytes, reads, writes, queue wait s)}"},
    {"forget_job", py_forget_job, METH_VARARGS, "forget_job(job) -> bool"},
    {"served", py_served, METH_NOARGS, "served() -> requests answered by the workers"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "themis.fs._datapath", "The compiled FUSE data path.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__datapath(void) { return PyModule_Create(&module); }
