/* themis.sched._core: the compiled fair-share scheduler core (see docs/themis-sched-api.md).
 *
 * One `Core` object is one scheduler: per-job FIFO queues of chunks, the policy's share tree
 * (weights set from Python), and one of five dispatchers (fifo, lottery, sfq, tbf, gift).
 * Python drives it with the GIL held (themis.sched.Scheduler); other extensions drive it
 * without the GIL through the capsule API of core_api.h (acquire/release).  Every entry point
 * takes the core's mutex, and creates no Python container while holding it (the garbage
 * collector could run arbitrary finalizers).  Decisions are those of the Python reference
 * model (themis/sched/reference.py): same float operations in the same order, and the lottery
 * draws from MT19937 seeded as Python's random.Random.  Cluster mode's rate caps wrap lottery
 * and SFQ as themis/sched/ratecap.py does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core_api.h"

enum { D_FIFO, D_LOTTERY, D_SFQ, D_TBF, D_GIFT };
enum { C_FREE, C_QUEUED, C_DISPATCHED };
enum { J_FREE, J_LIVE, J_DEAD };
#define EPS 1e-6   /* bytes: token arithmetic tolerance */
#define SLACK 1e-9 /* seconds: work due this soon counts as due now */
#define MAXLEV 2   /* internal tree levels above the jobs (group, user) */

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#include "_core_base.c" /* MT19937, Fenwick trees, tree nodes */

/* ---- chunks, jobs, the core ---------------------------------------------------------------- */
typedef struct waiter {
    pthread_cond_t cv;
    int ready;
    struct waiter *prev, *next; /* the core's list of threads in acquire() */
} waiter;

typedef struct {
    uint64_t nbytes;
    PyObject *obj;  /* Python path: the Chunk object (a reference), else NULL */
    waiter *w;      /* C path: the thread waiting in acquire() */
    int64_t seq;
    double t_enq;
    int32_t job;
    uint32_t gen;
    int state;
    int64_t next_free;
    int64_t ud; /* the simulator loop: its request id */
} chunk_t;

typedef struct {
    int64_t *ids;
    int64_t head, len, cap; /* cap: a power of 2 */
} ring_t;

static int ring_push(ring_t *r, int64_t id) {
    if (r->len == r->cap) {
        int64_t nc = r->cap ? r->cap * 2 : 4;
        int64_t *g = malloc(sizeof(int64_t) * (size_t)nc);
        if (!g) return -1;
        for (int64_t i = 0; i < r->len; i++) g[i] = r->ids[(r->head + i) & (r->cap - 1)];
        free(r->ids);
        r->ids = g;
        r->cap = nc;
        r->head = 0;
    }
    r->ids[(r->head + r->len++) & (r->cap - 1)] = id;
    return 0;
}

static inline int64_t ring_at(const ring_t *r, int64_t i) { return r->ids[(r->head + i) & (r->cap - 1)]; }

static inline int64_t ring_pop(ring_t *r) {
    int64_t id = r->ids[r->head];
    r->head = (r->head + 1) & (r->cap - 1);
    r->len--;
    return id;
}

typedef struct {
    /* the hot path's fields first: one cache line */
    ring_t q;
    int32_t inflight;
    int state, retired;
    uint64_t qbytes, bytes, ops;
    node *leaf;
    uint64_t winbytes;
    double wait_s;
    int nlev;
    int64_t serial;
    int64_t keys[MAXLEV];
    double base[MAXLEV + 1], boost[MAXLEV + 1];
    double rate;    /* TBF: this job's rate */
    PyObject *path; /* the job's policy path (a reference): its key in set_boosts' mapping */
    /* TBF / GIFT bucket */
    int hasb, gnew;
    double tokens, last, brate, coupons;
    uint64_t bgen;
    /* rate cap: crate > 0 names a rate; ccap: the cap exists (RateCapDispatcher._caps) */
    double crate, ctokens, clast;
    int ccap, cheld, cheld_since;
    uint64_t cgen;
    int64_t corder;
} job_t;

typedef struct {
    double ready;
    int64_t seq;
    uint64_t gen;
    int32_t job;
} tent;

typedef struct {
    tent *e;
    int64_t len, cap;
} theap_t; /* a min-heap of (ready, seq): TBF's eligible times, rate caps' release times */

struct ts_core {
    pthread_mutex_t mu;
    int kind, nlev, track_wait;
    int64_t max_inflight, inflight, queued, min_charge, chunk_bytes;
    uint64_t seed;
    mt_state mt;
    node *root;
    /* chunks */
    chunk_t *chunks;
    int64_t nchunks, capchunks, free_chunk, seq;
    /* jobs */
    job_t *jobs;
    int32_t njobs, capjobs;
    int32_t *freejobs;
    int32_t nfreejobs;
    int64_t serial;
    int32_t *dead;
    int32_t ndead, capdead;
    uint64_t bytes, ops; /* served by dropped jobs */
    /* fifo: global arrival order as (chunk id, gen) pairs */
    ring_t order;
    /* sfq / tbf sequence numbers */
    int64_t hseq;
    /* tbf */
    double tbf_rate, tbf_burst;
    theap_t theap;
    /* rate caps around lottery/SFQ (cluster mode) */
    int capped;
    double cap_burst_s;
    theap_t cheap;
    int64_t cseq, corder;
    /* gift */
    double gift_capacity, gift_burst_s, gift_coupon_s;
    int32_t *gactive;
    int32_t ngactive, capgactive;
    int gdirty, pay_coupons, has_last;
    double glast;
    double *gshares;
    int32_t *gsplit; /* the active jobs gshares was last split over, in order; -1: none */
    int32_t ngsplit, capgsplit;
    /* Python chunks dispatched by a C thread, handed out by the next take() */
    ring_t ready;
    int nwaiters, shared; /* shared: C threads have called acquire() */
    waiter *waiters;
    waiter *timekeeper; /* the one waiter that sleeps until the throttle's wake-up time */
    double tk_until; /* the timekeeper's alarm (monotonic seconds) */
    /* the achieved-share window: (job, serial, nbytes) */
    int64_t wsize, wlen, whead;
    int32_t *wjob;
    int64_t *wserial;
    uint64_t *wbytes;
    uint64_t wtotal;
};

typedef struct {
    PyObject_HEAD ts_core core;
} CoreObject;

static PyObject *state_str, *dispatched_obj;

/* -- chunk pool -- */
static int64_t chunk_alloc(ts_core *c) {
    if (c->free_chunk >= 0) {
        int64_t id = c->free_chunk;
        c->free_chunk = c->chunks[id].next_free;
        return id;
    }
    if (c->nchunks == c->capchunks) {
        int64_t nc = c->capchunks ? c->capchunks * 2 : 64;
        chunk_t *g = realloc(c->chunks, sizeof(chunk_t) * (size_t)nc);
        if (!g) return -1;
        c->chunks = g;
        c->capchunks = nc;
    }
    c->chunks[c->nchunks].gen = 0;
    return c->nchunks++;
}

static void chunk_free(ts_core *c, int64_t id) {
    chunk_t *ch = &c->chunks[id];
    ch->state = C_FREE;
    ch->gen++;
    ch->obj = NULL;
    ch->w = NULL;
    ch->next_free = c->free_chunk;
    c->free_chunk = id;
}

/* -- the tree -- */
static node *tree_child(node *parent, int64_t key, double base, double boost) {
    node *n = node_new(parent, key, base, boost);
    if (!n) return NULL;
    if (parent->nfree) {
        n->slot = parent->freeslots[--parent->nfree];
    } else {
        if (parent->nslots == parent->capslots) {
            int nc = parent->capslots ? parent->capslots * 2 : 4;
            node **g = realloc(parent->slots, sizeof(node *) * (size_t)nc);
            if (!g) {
                node_free(n);
                return NULL;
            }
            parent->slots = g;
            parent->capslots = nc;
        }
        n->slot = parent->nslots++;
    }
    parent->slots[n->slot] = n;
    parent->nchildren++;
    return n;
}

static node *tree_leaf(ts_core *c, int32_t h) {
    job_t *j = &c->jobs[h];
    if (j->leaf) return j->leaf;
    node *n = c->root;
    for (int lv = 0; lv < c->nlev; lv++) {
        node *child = NULL;
        for (int i = 0; i < n->nslots; i++) {
            node *s = n->slots[i];
            if (s && s->job < 0 && s->key == j->keys[lv]) {
                child = s;
                break;
            }
        }
        if (!child && !(child = tree_child(n, j->keys[lv], j->base[lv], j->boost[lv]))) return NULL;
        n = child;
    }
    node *leaf = tree_child(n, -1 - (int64_t)h, j->base[c->nlev], j->boost[c->nlev]);
    if (!leaf) return NULL;
    leaf->job = h;
    return j->leaf = leaf;
}

static void tree_remove(node *leaf) {
    node *n = leaf;
    while (n->parent && !n->nchildren) {
        node *p = n->parent;
        p->slots[n->slot] = NULL;
        p->nchildren--;
        if (p->nfree == p->capfree) {
            int nc = p->capfree ? p->capfree * 2 : 4;
            int *g = realloc(p->freeslots, sizeof(int) * (size_t)nc);
            if (!g) abort(); /* a few bytes: out of memory here is fatal */
            p->freeslots = g;
            p->capfree = nc;
        }
        p->freeslots[p->nfree++] = n->slot;
        n->nslots = 0; /* no children left to free */
        node_free(n);
        n = p;
    }
}

#include "_core_dispatch.c" /* fifo, lottery, SFQ, TBF, GIFT, rate caps */

/* ---- the scheduler ------------------------------------------------------------------------ */
static void window_add(ts_core *c, int32_t h, uint64_t nbytes) {
    if (!c->wsize) return;
    int64_t i;
    if (c->wlen == c->wsize) { /* drop the oldest */
        i = c->whead;
        job_t *o = &c->jobs[c->wjob[i]];
        if (o->state == J_LIVE && o->serial == c->wserial[i]) o->winbytes -= c->wbytes[i];
        c->wtotal -= c->wbytes[i];
        c->whead = (c->whead + 1) % c->wsize;
    } else {
        i = (c->whead + c->wlen++) % c->wsize;
    }
    c->wjob[i] = h;
    c->wserial[i] = c->jobs[h].serial;
    c->wbytes[i] = nbytes;
    c->jobs[h].winbytes += nbytes;
    c->wtotal += nbytes;
}

static int drop_job(ts_core *c, int32_t h) {
    job_t *j = &c->jobs[h];
    disp_forget(c, h);
    c->bytes += j->bytes;
    c->ops += j->ops;
    if (c->ndead == c->capdead) {
        int nc = c->capdead ? c->capdead * 2 : 16;
        int32_t *g = realloc(c->dead, sizeof(int32_t) * (size_t)nc);
        if (!g) return -1;
        c->dead = g;
        c->capdead = nc;
    }
    c->dead[c->ndead++] = h;
    j->state = J_DEAD;
    return 0;
}

static int maybe_drop(ts_core *c, int32_t h) {
    job_t *j = &c->jobs[h];
    return (j->retired && !j->q.len && !j->inflight) ? drop_job(c, h) : 0;
}

/* Queue one chunk; activates the job if it was idle. Returns the chunk id or -1 (ENOMEM). */
static int64_t push_chunk(ts_core *c, int32_t h, uint64_t nbytes, PyObject *obj, waiter *w, double now) {
    job_t *j = &c->jobs[h];
    int64_t id = chunk_alloc(c);
    if (id < 0) return -1;
    chunk_t *ch = &c->chunks[id];
    ch->nbytes = nbytes;
    ch->obj = obj;
    ch->w = w;
    ch->seq = c->seq++;
    ch->t_enq = c->track_wait ? mono() : 0.0;
    ch->job = h;
    ch->state = C_QUEUED;
    if (ring_push(&j->q, id)) {
        chunk_free(c, id);
        return -1;
    }
    if (c->kind == D_FIFO && ring_push(&c->order, (id << 24) | (ch->gen & 0xFFFFFF))) return -1;
    j->qbytes += nbytes;
    j->retired = 0;
    c->queued++;
    if (j->q.len == 1 && disp_activate(c, h, now)) return -1;
    return id;
}

/* Dispatch one chunk if the policy allows: returns its id, -1 if none, -2 on error. */
static int64_t dispatch_one(ts_core *c, double now) {
    int err = 0;
    int32_t h = disp_pick(c, now, &err);
    if (h < 0) return err ? -2 : -1;
    job_t *j = &c->jobs[h];
    int64_t id = ring_pop(&j->q);
    chunk_t *ch = &c->chunks[id];
    ch->state = C_DISPATCHED;
    j->qbytes -= ch->nbytes;
    j->inflight++;
    c->queued--;
    c->inflight++;
    if (c->track_wait) j->wait_s += mono() - ch->t_enq;
    int64_t charge = (int64_t)ch->nbytes > c->min_charge ? (int64_t)ch->nbytes : c->min_charge;
    if (disp_served(c, h, (double)charge, j->q.len > 0, now)) return -2;
    return id;
}

static double disp_wakeup(ts_core *c, double now);

/* Dispatch everything that may run now for the C waiters; Python chunks go to `ready`.  When a
 * throttling dispatcher holds work back, the timekeeper is woken only if the wake-up time is
 * now earlier than its alarm (a wake-up per request would cost the CPU the throttled jobs
 * leave to the others); with no timekeeper, the first waiter is woken to become one. */
static int pump(ts_core *c, double now) {
    while (c->inflight < c->max_inflight && c->queued) {
        int64_t id = dispatch_one(c, now);
        if (id == -1) {
            if (c->waiters && (c->capped || c->kind == D_TBF || c->kind == D_GIFT)) {
                if (!c->timekeeper)
                    pthread_cond_signal(&c->waiters->cv);
                else if (disp_wakeup(c, now) < c->tk_until) /* false when NAN */
                    pthread_cond_signal(&c->timekeeper->cv);
            }
            break;
        }
        if (id == -2) return -1;
        chunk_t *ch = &c->chunks[id];
        if (ch->w) {
            ch->w->ready = 1;
            pthread_cond_signal(&ch->w->cv);
            ch->w = NULL;
        } else {
            if (ring_push(&c->ready, (int64_t)(intptr_t)ch->obj)) return -1;
            chunk_free(c, id);
        }
    }
    return 0;
}

static double disp_wakeup(ts_core *c, double now) {
    if (!c->queued || c->inflight >= c->max_inflight) return NAN;
    return c->capped ? cap_wakeup(c, now) : inner_wakeup(c, now);
}

static void served_done(ts_core *c, int32_t h, uint64_t nbytes) {
    job_t *j = &c->jobs[h];
    j->inflight--;
    j->bytes += nbytes;
    j->ops++;
    c->inflight--;
    window_add(c, h, nbytes);
}

/* ---- the C API (core_api.h) --------------------------------------------------------------- */
static PyTypeObject CoreType;

static ts_core *api_from_object(PyObject *obj) {
    if (PyObject_TypeCheck(obj, &CoreType)) return &((CoreObject *)obj)->core;
    PyObject *inner = PyObject_GetAttrString(obj, "core");
    if (!inner) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "not a compiled themis scheduler");
        }
        return NULL;
    }
    ts_core *c = NULL;
    if (PyObject_TypeCheck(inner, &CoreType))
        c = &((CoreObject *)inner)->core;
    else
        PyErr_SetString(PyExc_TypeError, "not a compiled themis scheduler");
    Py_DECREF(inner); /* the scheduler object keeps its core alive */
    return c;
}

static int64_t api_acquire(ts_core *c, int32_t h, uint64_t nbytes) {
    if (nbytes > (uint64_t)c->chunk_bytes) return -EINVAL;
    pthread_mutex_lock(&c->mu);
    if (h < 0 || h >= c->njobs || c->jobs[h].state != J_LIVE) {
        pthread_mutex_unlock(&c->mu);
        return -ESRCH;
    }
    waiter w;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &attr);
    pthread_condattr_destroy(&attr);
    w.ready = 0;
    int64_t id = push_chunk(c, h, nbytes, NULL, &w, mono());
    int64_t rc = id;
    if (id < 0) {
        rc = -ENOMEM;
        goto out;
    }
    c->nwaiters++;
    c->shared = 1;
    w.prev = NULL;
    w.next = c->waiters;
    if (w.next) w.next->prev = &w;
    c->waiters = &w;
    if (pump(c, mono())) rc = -ENOMEM;
    /* Only one waiter at a time sleeps until the throttle's wake-up time (the timekeeper);
     * the others wait to be dispatched: waking them all at every wake-up would spend the
     * CPU that the throttled jobs leave to the others. */
    while (!w.ready && rc >= 0) {
        double wake = c->timekeeper && c->timekeeper != &w ? NAN : disp_wakeup(c, mono());
        if (isnan(wake)) {
            if (c->timekeeper == &w) c->timekeeper = NULL;
            pthread_cond_wait(&w.cv, &c->mu);
        } else {
            struct timespec ts;
            ts.tv_sec = (time_t)wake;
            ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            c->timekeeper = &w;
            c->tk_until = wake;
            pthread_cond_timedwait(&w.cv, &c->mu, &ts);
            if (!w.ready && pump(c, mono())) rc = -ENOMEM;
        }
    }
    c->nwaiters--;
    if (w.prev)
        w.prev->next = w.next;
    else
        c->waiters = w.next;
    if (w.next) w.next->prev = w.prev;
    if (c->timekeeper == &w) { /* hand the clock to another waiter */
        c->timekeeper = NULL;
        if (c->waiters) pthread_cond_signal(&c->waiters->cv);
    }
out:
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&w.cv);
    return rc;
}

static void api_release(ts_core *c, int64_t ticket) {
    pthread_mutex_lock(&c->mu);
    if (ticket >= 0 && ticket < c->nchunks && c->chunks[ticket].state == C_DISPATCHED) {
        chunk_t *ch = &c->chunks[ticket];
        int32_t h = ch->job;
        served_done(c, h, ch->nbytes);
        chunk_free(c, ticket);
        maybe_drop(c, h);
        pump(c, mono());
    }
    pthread_mutex_unlock(&c->mu);
}

static themis_core_api the_api = {THEMIS_CORE_API_VERSION, api_from_object, api_acquire, api_release};

/* ---- the Python type ---------------------------------------------------------------------- */
#define LOCK(c) pthread_mutex_lock(&(c)->mu)
#define UNLOCK(c) pthread_mutex_unlock(&(c)->mu)

static void core_clear_dispatcher(ts_core *c) {
    if (c->root) node_free(c->root);
    c->root = node_new(NULL, 0, 1.0, 1.0);
    c->order.len = c->order.head = 0;
    c->theap.len = c->cheap.len = 0;
    c->ngactive = 0;
    c->gdirty = c->pay_coupons = c->has_last = 0;
    c->ngsplit = -1;
    c->glast = 0.0;
    c->hseq = 0;
    mt_seed(&c->mt, c->seed);
    for (int32_t h = 0; h < c->njobs; h++) {
        c->jobs[h].leaf = NULL;
        c->jobs[h].hasb = 0;
        c->jobs[h].bgen++;
        c->jobs[h].ccap = c->jobs[h].cheld = 0;
        c->jobs[h].cgen++;
    }
}

static int parse_config(ts_core *c, PyObject *args) {
    int kind, nlev, capped;
    unsigned long long seed;
    double tr, tb, gc, gb, gcs, cb;
    if (!PyArg_ParseTuple(args, "iiKdddddpd", &kind, &nlev, &seed, &tr, &tb, &gc, &gb, &gcs, &capped, &cb))
        return -1;
    if (capped && kind != D_LOTTERY && kind != D_SFQ) {
        PyErr_SetString(PyExc_ValueError, "rate caps need a lottery or sfq dispatcher");
        return -1;
    }
    if (kind < D_FIFO || kind > D_GIFT || nlev < 0 || nlev > MAXLEV) {
        PyErr_SetString(PyExc_ValueError, "bad dispatcher kind or tree depth");
        return -1;
    }
    c->kind = kind;
    c->nlev = nlev;
    c->seed = seed;
    c->tbf_rate = tr;
    c->tbf_burst = tb;
    c->gift_capacity = gc;
    c->gift_burst_s = gb;
    c->gift_coupon_s = gcs;
    c->capped = capped;
    c->cap_burst_s = cb;
    return 0;
}

static int Core_init(CoreObject *self, PyObject *args, PyObject *kw) {
    ts_core *c = &self->core;
    long long max_inflight, min_charge, chunk_bytes, window;
    int track_wait;
    PyObject *config;
    static char *kwlist[] = {"config", "max_inflight", "min_charge", "chunk_bytes", "window", "track_wait", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!LLLLp", kwlist, &PyTuple_Type, &config, &max_inflight,
                                     &min_charge, &chunk_bytes, &window, &track_wait))
        return -1;
    if (c->root) {
        PyErr_SetString(PyExc_RuntimeError, "Core is initialised once");
        return -1;
    }
    if (parse_config(c, config)) return -1;
    pthread_mutex_init(&c->mu, NULL);
    c->max_inflight = max_inflight;
    c->min_charge = min_charge;
    c->chunk_bytes = chunk_bytes;
    c->track_wait = track_wait;
    c->free_chunk = -1;
    c->wsize = window > 0 ? window : 0;
    if (c->wsize) {
        c->wjob = malloc(sizeof(int32_t) * (size_t)c->wsize);
        c->wserial = malloc(sizeof(int64_t) * (size_t)c->wsize);
        c->wbytes = malloc(sizeof(uint64_t) * (size_t)c->wsize);
        if (!c->wjob || !c->wserial || !c->wbytes) {
            PyErr_NoMemory();
            return -1;
        }
    }
    core_clear_dispatcher(c);
    if (!c->root) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void Core_dealloc(CoreObject *self) {
    ts_core *c = &self->core;
    for (int64_t i = 0; i < c->nchunks; i++)
        if (c->chunks[i].state != C_FREE) Py_XDECREF(c->chunks[i].obj);
    while (c->ready.len) {
        PyObject *o = (PyObject *)(intptr_t)ring_pop(&c->ready);
        Py_DECREF(o);
    }
    for (int32_t h = 0; h < c->njobs; h++) {
        free(c->jobs[h].q.ids);
        Py_XDECREF(c->jobs[h].path);
    }
    if (c->root) {
        node_free(c->root);
        pthread_mutex_destroy(&c->mu);
    }
    free(c->chunks);
    free(c->jobs);
    free(c->freejobs);
    free(c->dead);
    free(c->order.ids);
    free(c->theap.e);
    free(c->cheap.e);
    free(c->gactive);
    free(c->gshares);
    free(c->gsplit);
    free(c->ready.ids);
    free(c->wjob);
    free(c->wserial);
    free(c->wbytes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int parse_doubles(PyObject *seq, double *out, int n, const char *what) {
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_ValueError, "%s: a tuple of %d expected", what, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        out[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(seq, i));
        if (out[i] == -1.0 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* set a job's path keys, base weights and boosts (one per level, leaf last) and TBF rate */
static int set_job_desc(ts_core *c, int32_t h, PyObject *keys, PyObject *bases, PyObject *boosts, double rate,
                        PyObject *path) {
    job_t *j = &c->jobs[h];
    if (!PyTuple_Check(keys) || PyTuple_GET_SIZE(keys) != c->nlev) {
        PyErr_SetString(PyExc_ValueError, "keys: one per internal tree level");
        return -1;
    }
    for (int i = 0; i < c->nlev; i++) {
        j->keys[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(keys, i));
        if (j->keys[i] == -1 && PyErr_Occurred()) return -1;
    }
    if (parse_doubles(bases, j->base, c->nlev + 1, "bases") || parse_doubles(boosts, j->boost, c->nlev + 1, "boosts"))
        return -1;
    j->nlev = c->nlev;
    j->rate = rate;
    c->ngsplit = -1; /* GIFT's shares depend on the keys and bases */
    if (c->capped) j->crate = rate;
    Py_INCREF(path);
    Py_XSETREF(j->path, path);
    return 0;
}

static PyObject *Core_add_job(CoreObject *self, PyObject *args) {
    ts_core *c = &self->core;
    PyObject *keys, *bases, *boosts, *path;
    double rate;
    if (!PyArg_ParseTuple(args, "OOOdO", &keys, &bases, &boosts, &rate, &path)) return NULL;
    LOCK(c);
    int32_t h;
    if (c->nfreejobs) {
        h = c->freejobs[--c->nfreejobs];
    } else {
        if (c->njobs == c->capjobs) {
            int32_t nc = c->capjobs ? c->capjobs * 2 : 16;
            job_t *g = realloc(c->jobs, sizeof(job_t) * (size_t)nc);
            double *gs = g ? realloc(c->gshares, sizeof(double) * (size_t)nc) : NULL;
            int32_t *gf = gs ? realloc(c->freejobs, sizeof(int32_t) * (size_t)nc) : NULL;
            if (g) c->jobs = g;
            if (gs) c->gshares = gs;
            if (!gf) {
                UNLOCK(c);
                return PyErr_NoMemory();
            }
            c->freejobs = gf;
            c->capjobs = nc;
        }
        h = c->njobs++;
        memset(&c->jobs[h], 0, sizeof(job_t));
    }
    job_t *j = &c->jobs[h];
    ring_t q = j->q;
    uint64_t bgen = j->bgen + 1;
    Py_CLEAR(j->path);
    memset(j, 0, sizeof(job_t));
    j->q = q;
    j->q.len = j->q.head = 0;
    j->bgen = bgen;
    j->serial = c->serial++;
    j->state = J_LIVE;
    if (set_job_desc(c, h, keys, bases, boosts, rate, path)) {
        j->state = J_FREE;
        c->freejobs[c->nfreejobs++] = h;
        UNLOCK(c);
        return NULL;
    }
    UNLOCK(c);
    return PyLong_FromLong(h);
}

static int check_job(ts_core *c, int32_t h) {
    if (h < 0 || h >= c->njobs || c->jobs[h].state == J_FREE) {
        PyErr_Format(PyExc_KeyError, "no job handle %d", h);
        return -1;
    }
    return 0;
}

static PyObject *Core_set_job(CoreObject *self, PyObject *args) {
    ts_core *c = &self->core;
    int h;
    PyObject *keys, *bases, *boosts, *path;
    double rate;
    if (!PyArg_ParseTuple(args, "iOOOdO", &h, &keys, &bases, &boosts, &rate, &path)) return NULL;
    LOCK(c);
    int rc = check_job(c, h) || set_job_desc(c, h, keys, bases, boosts, rate, path);
    UNLOCK(c);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_submit(CoreObject *self, PyObject *const *args, Py_ssize_t nargs) {
    ts_core *c = &self->core;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "submit(job, nbytes, chunk, now)");
        return NULL;
    }
    long h = PyLong_AsLong(args[0]);
    long long nbytes = PyLong_AsLongLong(args[1]);
    double now = PyFloat_AsDouble(args[3]);
    if (PyErr_Occurred()) return NULL;
    LOCK(c);
    if (check_job(c, (int32_t)h)) {
        UNLOCK(c);
        return NULL;
    }
    if (c->jobs[h].state == J_DEAD) {
        UNLOCK(c);
        Py_RETURN_FALSE;
    }
    Py_INCREF(args[2]);
    int64_t id = push_chunk(c, (int32_t)h, (uint64_t)nbytes, args[2], NULL, now);
    int rc = id >= 0 && c->nwaiters ? pump(c, now) : 0;
    UNLOCK(c);
    if (id < 0 || rc) return PyErr_NoMemory();
    Py_RETURN_TRUE;
}

static PyObject *Core_take(CoreObject *self, PyObject *const *args, Py_ssize_t nargs) {
    ts_core *c = &self->core;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "take(limit, now)");
        return NULL;
    }
    long limit = PyLong_AsLong(args[0]);
    double now = PyFloat_AsDouble(args[1]);
    if (PyErr_Occurred()) return NULL;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    LOCK(c);
    int fail = 0;
    while (c->ready.len && (limit <= 0 || PyList_GET_SIZE(out) < limit)) {
        PyObject *o = (PyObject *)(intptr_t)ring_pop(&c->ready);
        fail = PyList_Append(out, o) || PyObject_SetAttr(o, state_str, dispatched_obj);
        Py_DECREF(o);
        if (fail) break;
    }
    while (!fail && c->inflight < c->max_inflight && c->queued && (limit <= 0 || PyList_GET_SIZE(out) < limit)) {
        int64_t id = dispatch_one(c, now);
        if (id == -1) break;
        if (id == -2) {
            PyErr_NoMemory();
            fail = 1;
            break;
        }
        chunk_t *ch = &c->chunks[id];
        if (ch->w) { /* a C thread's chunk: wake it */
            ch->w->ready = 1;
            pthread_cond_signal(&ch->w->cv);
            ch->w = NULL;
            continue;
        }
        PyObject *o = ch->obj;
        chunk_free(c, id);
        fail = PyList_Append(out, o) || PyObject_SetAttr(o, state_str, dispatched_obj);
        Py_DECREF(o);
    }
    UNLOCK(c);
    if (fail) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *Core_done(CoreObject *self, PyObject *const *args, Py_ssize_t nargs) {
    ts_core *c = &self->core;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "done(job, nbytes)");
        return NULL;
    }
    long h = PyLong_AsLong(args[0]);
    long long nbytes = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    LOCK(c);
    if (check_job(c, (int32_t)h) || c->jobs[h].inflight <= 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the job has nothing in flight");
        UNLOCK(c);
        return NULL;
    }
    served_done(c, (int32_t)h, (uint64_t)nbytes);
    int rc = maybe_drop(c, (int32_t)h);
    if (!rc && c->nwaiters) rc = pump(c, mono());
    UNLOCK(c);
    if (rc) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *Core_cancel(CoreObject *self, PyObject *args) {
    ts_core *c = &self->core;
    int h;
    PyObject *objs;
    double now;
    if (!PyArg_ParseTuple(args, "iO!d", &h, &PyList_Type, &objs, &now)) return NULL;
    LOCK(c);
    if (check_job(c, h)) {
        UNLOCK(c);
        return NULL;
    }
    job_t *j = &c->jobs[h];
    Py_ssize_t n = PyList_GET_SIZE(objs);
    int64_t kept = 0, gone = 0, len = j->q.len;
    for (int64_t i = 0; i < len; i++) {
        int64_t id = ring_at(&j->q, i);
        chunk_t *ch = &c->chunks[id];
        int hit = 0;
        for (Py_ssize_t k = 0; k < n && ch->obj; k++)
            if (PyList_GET_ITEM(objs, k) == ch->obj) {
                hit = 1;
                break;
            }
        if (hit) {
            j->qbytes -= ch->nbytes;
            PyObject *o = ch->obj;
            chunk_free(c, id);
            Py_DECREF(o); /* `objs` holds it too: never freed here, under the lock */
            gone++;
        } else {
            j->q.ids[(j->q.head + kept++) & (j->q.cap - 1)] = id;
        }
    }
    j->q.len = kept;
    c->queued -= gone;
    int rc = 0;
    if (gone && !kept && disp_has_state(c, j)) rc = disp_deactivate(c, h, now);
    if (!rc && gone) rc = maybe_drop(c, h);
    UNLOCK(c);
    if (rc) return PyErr_NoMemory();
    return PyLong_FromLongLong(gone);
}

static PyObject *Core_wakeup(CoreObject *self, PyObject *arg) {
    ts_core *c = &self->core;
    double now = PyFloat_AsDouble(arg);
    if (now == -1.0 && PyErr_Occurred()) return NULL;
    LOCK(c);
    double w = disp_wakeup(c, now);
    UNLOCK(c);
    if (isnan(w)) Py_RETURN_NONE;
    return PyFloat_FromDouble(w);
}

static PyObject *Core_forget(CoreObject *self, PyObject *arg) {
    ts_core *c = &self->core;
    long h = PyLong_AsLong(arg);
    if (h == -1 && PyErr_Occurred()) return NULL;
    LOCK(c);
    int rc = check_job(c, (int32_t)h);
    if (!rc && c->jobs[h].state == J_LIVE) {
        job_t *j = &c->jobs[h];
        if (j->q.len || j->inflight)
            j->retired = 1;
        else
            rc = drop_job(c, (int32_t)h) ? (PyErr_NoMemory(), -1) : 0;
    }
    UNLOCK(c);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_reap(CoreObject *self, PyObject *Py_UNUSED(ignored)) {
    ts_core *c = &self->core;
    PyObject *out = PyList_New(0); /* made outside the lock: it may start the collector */
    if (!out) return NULL;
    LOCK(c);
    for (int32_t i = 0; i < c->ndead; i++) {
        int32_t h = c->dead[i];
        PyObject *n = PyLong_FromLong(h);
        if (!n || PyList_Append(out, n)) { /* the dead stay listed for the next call */
            Py_XDECREF(n);
            memmove(c->dead, c->dead + i, sizeof(int32_t) * (size_t)(c->ndead - i));
            c->ndead -= i;
            UNLOCK(c);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(n);
        c->jobs[h].state = J_FREE;
        Py_CLEAR(c->jobs[h].path);
        c->freejobs[c->nfreejobs++] = h;
    }
    c->ndead = 0;
    UNLOCK(c);
    return out;
}

/* existing tree nodes take their new boosts (a changed active node's parent rebuilds its
 * Fenwick tree, as the reference does) */
static void boost_walk(node *n, int lottery) {
    int rebuild = 0;
    for (int i = 0; i < n->nslots; i++) {
        node *s = n->slots[i];
        if (!s) continue;
        if (s->nboost != s->boost) {
            s->boost = s->nboost;
            s->weight = s->base * s->nboost;
            if (s->on) rebuild = 1;
        }
        boost_walk(s, lottery);
    }
    if (lottery && rebuild) {
        double *w = malloc(sizeof(double) * (size_t)(n->nslots ? n->nslots : 1));
        if (!w) abort();
        for (int i = 0; i < n->nslots; i++) w[i] = n->slots[i] && n->slots[i]->on ? n->slots[i]->weight : 0.0;
        if (fen_rebuild(&n->fen, w, n->nslots)) abort();
        free(w);
    }
}

static void boost_reset(node *n) {
    for (int i = 0; i < n->nslots; i++)
        if (n->slots[i]) {
            n->slots[i]->nboost = 1.0;
            boost_reset(n->slots[i]);
        }
}

/* set_boosts(vectors) -> missing: ``vectors`` maps a job's path to its boosts per level (leaf
 * last); the handles of live jobs whose path it lacks are returned and nothing changes, else
 * every job takes its boosts and the tree its new weights, and [] is returned */
static PyObject *Core_set_boosts(CoreObject *self, PyObject *arg) {
    ts_core *c = &self->core;
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "a dict {path: boosts}");
        return NULL;
    }
    PyObject *missing = PyList_New(0);
    if (!missing) return NULL;
    LOCK(c);
    int fail = 0;
    for (int32_t h = 0; h < c->njobs && !fail; h++) {
        job_t *j = &c->jobs[h];
        if (j->state != J_LIVE) continue;
        PyObject *vec = PyDict_GetItemWithError(arg, j->path);
        if (!vec) {
            PyObject *n = PyErr_Occurred() ? NULL : PyLong_FromLong(h);
            fail = !n || PyList_Append(missing, n);
            Py_XDECREF(n);
        }
    }
    if (!fail && !PyList_GET_SIZE(missing)) {
        for (int32_t h = 0; h < c->njobs && !fail; h++) {
            job_t *j = &c->jobs[h];
            if (j->state == J_LIVE) fail = parse_doubles(PyDict_GetItem(arg, j->path), j->boost, c->nlev + 1, "boosts");
        }
        if (!fail) {
            boost_reset(c->root);
            for (int32_t h = 0; h < c->njobs; h++) {
                job_t *j = &c->jobs[h];
                if (j->state != J_LIVE || !j->leaf) continue;
                node *n = j->leaf;
                for (int lv = c->nlev; lv >= 0 && n; lv--, n = n->parent) n->nboost = j->boost[lv];
            }
            boost_walk(c->root, c->kind == D_LOTTERY);
        }
    }
    UNLOCK(c);
    if (fail) {
        Py_DECREF(missing);
        return NULL;
    }
    return missing;
}

/* set_rates([(job, rate)], now): rate caps (0: none) for every live job, as
 * RateCapDispatcher.set_rates: existing caps, in the order they were made, drop (releasing a
 * held job) or take the new rate */
static int cmp_i64(const void *a, const void *b);

static PyObject *Core_set_rates(CoreObject *self, PyObject *args) {
    ts_core *c = &self->core;
    PyObject *rates;
    double now;
    if (!PyArg_ParseTuple(args, "O!d", &PyList_Type, &rates, &now)) return NULL;
    LOCK(c);
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rates) && !rc; i++) {
        int h;
        double r;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(rates, i), "id", &h, &r) || check_job(c, h))
            rc = -1;
        else
            c->jobs[h].rate = r; /* staged; applied below in cap order */
    }
    int64_t *order = rc ? NULL : malloc(sizeof(int64_t) * 2 * (size_t)(c->njobs ? c->njobs : 1));
    if (!rc && !order) rc = (PyErr_NoMemory(), -1);
    int64_t n = 0;
    for (int32_t h = 0; !rc && h < c->njobs; h++) {
        job_t *j = &c->jobs[h];
        if (j->state != J_LIVE) continue;
        if (j->ccap) {
            order[2 * n] = j->corder;
            order[2 * n++ + 1] = h;
        } else {
            j->crate = j->rate;
        }
    }
    if (!rc) qsort(order, (size_t)n, 2 * sizeof(int64_t), cmp_i64);
    for (int64_t i = 0; !rc && i < n; i++) {
        int32_t h = (int32_t)order[2 * i + 1];
        job_t *j = &c->jobs[h];
        if (!(j->rate > 0)) {
            j->crate = j->rate;
            j->ccap = 0;
            if (j->cheld && cap_release(c, h, now)) rc = (PyErr_NoMemory(), -1);
        } else {
            cap_refill(c, j, now); /* up to now at the rate in force until now */
            j->crate = j->rate;
            j->ctokens = minf(j->ctokens, j->rate * c->cap_burst_s);
        }
    }
    free(order);
    if (!rc && c->nwaiters) rc = pump(c, mono()) ? (PyErr_NoMemory(), -1) : 0;
    UNLOCK(c);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

/* take_held() -> handles of jobs held back by their cap since the last call */
static PyObject *Core_take_held(CoreObject *self, PyObject *Py_UNUSED(ignored)) {
    ts_core *c = &self->core;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    LOCK(c);
    for (int32_t h = 0; h < c->njobs; h++) {
        job_t *j = &c->jobs[h];
        if (j->state != J_LIVE || !(j->cheld_since || j->cheld)) continue;
        j->cheld_since = j->cheld;
        PyObject *n = PyLong_FromLong(h);
        if (!n || PyList_Append(out, n)) {
            Py_XDECREF(n);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(n);
    }
    UNLOCK(c);
    return out;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* configure(config): switch dispatcher/policy shape; then set_job() each job and reload(now) */
static PyObject *Core_configure(CoreObject *self, PyObject *arg) {
    ts_core *c = &self->core;
    if (!PyTuple_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "a config tuple");
        return NULL;
    }
    LOCK(c);
    int rc = parse_config(c, arg);
    if (!rc) core_clear_dispatcher(c);
    UNLOCK(c);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_reload(CoreObject *self, PyObject *arg) {
    ts_core *c = &self->core;
    double now = PyFloat_AsDouble(arg);
    if (now == -1.0 && PyErr_Occurred()) return NULL;
    LOCK(c);
    int rc = 0;
    if (c->kind == D_FIFO) { /* re-enqueue in arrival order */
        int64_t n = 0, k = 0;
        for (int32_t h = 0; h < c->njobs; h++)
            if (c->jobs[h].state == J_LIVE) n += c->jobs[h].q.len;
        int64_t *all = malloc(sizeof(int64_t) * (size_t)(n ? n : 1) * 2);
        if (!all) rc = -1;
        for (int32_t h = 0; !rc && h < c->njobs; h++)
            if (c->jobs[h].state == J_LIVE)
                for (int64_t i = 0; i < c->jobs[h].q.len; i++) {
                    int64_t id = ring_at(&c->jobs[h].q, i);
                    all[2 * k] = c->chunks[id].seq;
                    all[2 * k++ + 1] = id;
                }
        if (!rc) qsort(all, (size_t)n, 2 * sizeof(int64_t), cmp_i64);
        for (int64_t i = 0; !rc && i < n; i++)
            rc = ring_push(&c->order, (all[2 * i + 1] << 24) | (c->chunks[all[2 * i + 1]].gen & 0xFFFFFF));
        free(all);
    }
    /* activate the jobs with queued work in the order they were first seen */
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(c->njobs ? c->njobs : 1) * 2);
    int64_t n = 0;
    if (!order) rc = -1;
    for (int32_t h = 0; !rc && h < c->njobs; h++)
        if (c->jobs[h].state == J_LIVE && c->jobs[h].q.len) {
            order[2 * n] = c->jobs[h].serial;
            order[2 * n++ + 1] = h;
        }
    if (!rc) qsort(order, (size_t)n, 2 * sizeof(int64_t), cmp_i64);
    for (int64_t i = 0; !rc && i < n; i++) rc = disp_activate(c, (int32_t)order[2 * i + 1], now);
    free(order);
    if (!rc && c->nwaiters) rc = pump(c, mono());
    UNLOCK(c);
    if (rc) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* stats() -> (queued, inflight, bytes, ops, window_total,
 *             [(job, bytes, ops, queued_chunks, queued_bytes, inflight, wait_s, window_bytes)]) */
static PyObject *Core_stats(CoreObject *self, PyObject *Py_UNUSED(ignored)) {
    ts_core *c = &self->core;
    typedef struct {
        int32_t h, inflight;
        uint64_t bytes, ops, qbytes, winbytes;
        int64_t qlen;
        double wait_s;
    } row_t;
    /* snapshot under the lock, build Python objects after it (they may start the collector) */
    LOCK(c);
    row_t *rows = malloc(sizeof(row_t) * (size_t)(c->njobs ? c->njobs : 1));
    int32_t n = 0;
    uint64_t bytes = c->bytes, ops = c->ops, wtotal = c->wtotal;
    int64_t queued = c->queued, inflight = c->inflight;
    for (int32_t h = 0; rows && h < c->njobs; h++) {
        job_t *j = &c->jobs[h];
        if (j->state != J_LIVE) continue;
        bytes += j->bytes;
        ops += j->ops;
        rows[n++] = (row_t){h, j->inflight, j->bytes, j->ops, j->qbytes, j->winbytes, j->q.len, j->wait_s};
    }
    UNLOCK(c);
    if (!rows) return PyErr_NoMemory();
    PyObject *jobs = PyList_New(n);
    for (int32_t i = 0; jobs && i < n; i++) {
        row_t *r = &rows[i];
        PyObject *t = Py_BuildValue("(iKKLKidK)", r->h, (unsigned long long)r->bytes, (unsigned long long)r->ops,
                                    (long long)r->qlen, (unsigned long long)r->qbytes, r->inflight, r->wait_s,
                                    (unsigned long long)r->winbytes);
        if (!t)
            Py_CLEAR(jobs);
        else
            PyList_SET_ITEM(jobs, i, t);
    }
    free(rows);
    if (!jobs) return NULL;
    return Py_BuildValue("(LLKKKN)", (long long)queued, (long long)inflight, (unsigned long long)bytes,
                         (unsigned long long)ops, (unsigned long long)wtotal, jobs);
}

static PyObject *Core_get_queued(CoreObject *self, void *Py_UNUSED(closure)) {
    return PyLong_FromLongLong(self->core.queued);
}

static PyObject *Core_get_inflight(CoreObject *self, void *Py_UNUSED(closure)) {
    return PyLong_FromLongLong(self->core.inflight);
}

static PyObject *Core_get_shared(CoreObject *self, void *Py_UNUSED(closure)) {
    return PyBool_FromLong(self->core.shared);
}

static PyObject *Core_get_max_inflight(CoreObject *self, void *Py_UNUSED(closure)) {
    return PyLong_FromLongLong(self->core.max_inflight);
}

static int Core_set_max_inflight(CoreObject *self, PyObject *v, void *Py_UNUSED(closure)) {
    long long m = v ? PyLong_AsLongLong(v) : -1;
    if (m == -1 && PyErr_Occurred()) return -1;
    if (m < 1) {
        PyErr_SetString(PyExc_ValueError, "max_inflight must be >= 1");
        return -1;
    }
    ts_core *c = &self->core;
    LOCK(c);
    c->max_inflight = m;
    int rc = c->nwaiters ? pump(c, mono()) : 0;
    UNLOCK(c);
    if (rc) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

#include "_core_testing.c" /* test helpers */

#include "_simloop.c" /* the simulator's event loop, over the functions above */

static PyMethodDef mod_methods[] = {
    {"stress", mod_stress, METH_VARARGS,
     "stress(sched, [(job, nbytes), ...], seconds, hold_s) -> [(count, err)]: one pthread per "
     "entry loops acquire/hold/release without the GIL (a test helper)"},
    {"mt_draws", mod_mt_draws, METH_VARARGS, "mt_draws(seed, n): the lottery's first n draws (a test helper)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_core", "The compiled Themis scheduler core.", -1,
                                    mod_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&CoreType) < 0 || PyType_Ready(&SimLoopType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    state_str = PyUnicode_InternFromString("state");
    dispatched_obj = PyLong_FromLong(1); /* themis.sched.items.DISPATCHED */
    Py_INCREF(&CoreType);
    Py_INCREF(&SimLoopType);
    if (PyModule_AddObject(m, "SimLoop", (PyObject *)&SimLoopType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (!state_str || !dispatched_obj || PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0 ||
        PyModule_AddObject(m, "_C_API", PyCapsule_New(&the_api, THEMIS_CORE_CAPSULE, NULL)) < 0 ||
        PyModule_AddIntConstant(m, "API_VERSION", THEMIS_CORE_API_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
