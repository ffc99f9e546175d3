/* The I/O simulator's event loop (themis/iosim/engine.py, IOSim._loop) in C.
 *
 * Included by _core.c: it drives the compiled schedulers' static functions directly.  Every
 * event, sequence number and float operation is the Python loop's, which stays as the reference
 * model (IOSim(reference=True)); tests/themis/test_iosim_loop.py checks both give the same
 * results.  The loop hands control back to Python for the usage exchange (SYNC) and progress
 * reports.  The loop owns its schedulers: no C thread may share them meanwhile.
 */

enum { E_DONE, E_WAKE, E_PHASE, E_START, E_END, E_SYNC, E_SRVWAKE, E_STOP };

typedef struct {
    double t;
    int64_t seq;
    int kind;
    int32_t a;
    int64_t b;
} sev;

typedef struct {
    ts_core *core;
    int64_t busy, channels;
    double wake_at;
} ssrv;

typedef struct {
    int32_t job;
    int64_t remaining, outstanding, pos;
} sproc;

typedef struct {
    double *v;
    int64_t len, cap;
} dvec;

typedef struct {
    int32_t *srv, *handle; /* per stripe: server index and the job's handle there */
    int32_t nsrv, nprocs, proc0;
    int64_t nreq, nbytes, depth;
    double think, period;
    int random, running, finished;
    mt_state rng;
    int64_t outstanding, ops, procs_done;
    double busy_start, burst_start;
    int64_t *win;
    dvec busy, bursts; /* (start, end) pairs */
} sjob;

typedef struct {
    int32_t proc;
    int32_t pending;
    int64_t next_free;
} sreq;

typedef struct {
    PyObject_HEAD PyObject *scheds;
    ssrv *srv;
    int32_t nsrv;
    sjob *jobs;
    int32_t njobs;
    sproc *procs;
    int32_t nprocs;
    sreq *reqs;
    int64_t nreqs, capreqs, free_req;
    sev *heap;
    int64_t hlen, hcap, seq, chunks;
    double now, overhead, inv_bw, inv_win;
    int64_t nwin;
    int timed;
} SimLoopObject;

static int dvec_push2(dvec *d, double a, double b) {
    if (d->len + 2 > d->cap) {
        int64_t nc = d->cap ? d->cap * 2 : 16;
        double *g = realloc(d->v, sizeof(double) * (size_t)nc);
        if (!g) return -1;
        d->v = g;
        d->cap = nc;
    }
    d->v[d->len++] = a;
    d->v[d->len++] = b;
    return 0;
}

static int sev_less(const sev *x, const sev *y) { return x->t < y->t || (x->t == y->t && x->seq < y->seq); }
DEFINE_HEAP(evheap, sev, sev_less)

static int sl_push_seq(SimLoopObject *L, double t, int64_t seq, int kind, int32_t a, int64_t b) {
    sev e = {t, seq, kind, a, b};
    return evheap_push(&L->heap, &L->hlen, &L->hcap, e);
}

static inline int sl_push(SimLoopObject *L, double t, int kind, int32_t a, int64_t b) {
    return sl_push_seq(L, t, ++L->seq, kind, a, b);
}

static sev sl_pop(SimLoopObject *L) {
    sev top = L->heap[0];
    evheap_remove(L->heap, &L->hlen, 0);
    return top;
}

static int64_t sl_req_alloc(SimLoopObject *L) {
    if (L->free_req >= 0) {
        int64_t r = L->free_req;
        L->free_req = L->reqs[r].next_free;
        return r;
    }
    if (L->nreqs == L->capreqs) {
        int64_t nc = L->capreqs ? L->capreqs * 2 : 1024;
        sreq *g = realloc(L->reqs, sizeof(sreq) * (size_t)nc);
        if (!g) return -1;
        L->reqs = g;
        L->capreqs = nc;
    }
    return L->nreqs++;
}

/* _wake: schedule a wake-up for when a throttling dispatcher releases held-back work */
static int sl_wake(SimLoopObject *L, int32_t s) {
    ssrv *v = &L->srv[s];
    ts_core *c = v->core;
    if (c->queued && c->inflight < c->max_inflight) {
        double w = disp_wakeup(c, L->now);
        if (!isnan(w) && w < v->wake_at) {
            v->wake_at = w;
            return sl_push(L, w, E_SRVWAKE, s, 0);
        }
    }
    return 0;
}

/* _kick: dispatch whatever the server's scheduler releases at time t */
static int sl_kick(SimLoopObject *L, int32_t s, double t) {
    ssrv *v = &L->srv[s];
    ts_core *c = v->core;
    double start = t + L->overhead;
    while (c->inflight < c->max_inflight && c->queued) {
        int64_t id = dispatch_one(c, t);
        if (id == -1) break;
        if (id == -2) return -1;
        chunk_t *ch = &c->chunks[id];
        if (sl_push(L, start + (double)ch->nbytes * L->inv_bw, E_DONE, s, id)) return -1;
        L->chunks++;
        v->busy++;
    }
    return L->timed ? sl_wake(L, s) : 0;
}

static int sl_submit(SimLoopObject *L, int32_t s, int32_t h, int32_t p, int64_t nbytes) {
    ts_core *c = L->srv[s].core;
    int64_t r = sl_req_alloc(L);
    if (r < 0) return -1;
    L->reqs[r].proc = p;
    int64_t cb = c->chunk_bytes, n = nbytes <= cb ? 1 : (nbytes + cb - 1) / cb;
    L->reqs[r].pending = (int32_t)n;
    double now = L->timed ? L->now : 0.0;
    if (c->jobs[h].state != J_LIVE) {
        PyErr_SetString(PyExc_RuntimeError, "a simulated job's handle was dropped");
        return -1;
    }
    for (int64_t off = 0, k = 0; k < n; k++, off += cb) {
        int64_t part = nbytes <= cb ? nbytes : (nbytes - off < cb ? nbytes - off : cb);
        int64_t id = push_chunk(c, h, (uint64_t)part, NULL, NULL, now);
        if (id < 0) return -1;
        c->chunks[id].ud = r;
    }
    return 0;
}

static int sl_issue(SimLoopObject *L, int32_t p) {
    sproc *pr = &L->procs[p];
    sjob *j = &L->jobs[pr->job];
    if (!j->running) return 0;
    while (pr->outstanding < j->depth && pr->remaining) {
        pr->remaining -= 1;
        int32_t k;
        if (!j->random) {
            pr->pos += 1;
            k = (int32_t)(pr->pos % j->nsrv);
        } else {
            k = (int32_t)(mt_random(&j->rng) * j->nsrv);
        }
        int32_t s = j->srv[k];
        if (!j->outstanding) j->busy_start = L->now;
        pr->outstanding++;
        j->outstanding++;
        if (sl_submit(L, s, j->handle[k], p, j->nbytes)) return -1;
        if (L->srv[s].busy < L->srv[s].channels && sl_kick(L, s, L->now)) return -1;
    }
    return 0;
}

static int sl_start_burst(SimLoopObject *L, int32_t jx) {
    sjob *j = &L->jobs[jx];
    j->procs_done = 0;
    j->burst_start = L->now;
    for (int32_t i = 0; i < j->nprocs; i++) L->procs[j->proc0 + i].remaining = j->nreq ? j->nreq : -1;
    for (int32_t i = 0; i < j->nprocs; i++)
        if (sl_issue(L, j->proc0 + i)) return -1;
    return 0;
}

static int sl_forget(ts_core *c, int32_t h) {
    job_t *j = &c->jobs[h];
    if (j->state != J_LIVE) return 0;
    if (j->q.len || j->inflight) {
        j->retired = 1;
        return 0;
    }
    return drop_job(c, h);
}

static int sl_retire(SimLoopObject *L, int32_t jx) {
    sjob *j = &L->jobs[jx];
    if (j->finished) return 0;
    j->finished = 1;
    for (int32_t k = 0; k < j->nsrv; k++)
        if (sl_forget(L->srv[j->srv[k]].core, j->handle[k])) return -1;
    return 0;
}

static int sl_done(SimLoopObject *L, double t, int32_t s, int64_t id) {
    ssrv *v = &L->srv[s];
    ts_core *c = v->core;
    chunk_t *ch = &c->chunks[id];
    int32_t h = ch->job;
    int64_t r = ch->ud;
    served_done(c, h, ch->nbytes);
    chunk_free(c, id);
    if (maybe_drop(c, h)) return -1;
    v->busy--;
    if (!--L->reqs[r].pending) {
        int32_t p = L->reqs[r].proc;
        L->reqs[r].next_free = L->free_req;
        L->free_req = r;
        sproc *pr = &L->procs[p];
        int32_t jx = pr->job;
        sjob *j = &L->jobs[jx];
        pr->outstanding--;
        j->outstanding--;
        if (!j->outstanding && dvec_push2(&j->busy, j->busy_start, t)) return -1;
        j->ops++;
        int64_t i = (int64_t)(t * L->inv_win);
        if (i < L->nwin) j->win[i]++;
        if (pr->remaining) {
            if (j->think != 0.0) {
                if (sl_push(L, t + j->think, E_WAKE, p, 0)) return -1;
            } else if (sl_issue(L, p)) {
                return -1;
            }
        } else if (!pr->outstanding) {
            j->procs_done++;
            if (j->procs_done == j->nprocs) {
                if (dvec_push2(&j->bursts, j->burst_start, t)) return -1;
                if (j->running && sl_push(L, t + j->period, E_PHASE, jx, 0)) return -1;
            }
        }
        if (!j->running && !j->outstanding && sl_retire(L, jx)) return -1;
    }
    if (v->busy < v->channels) return sl_kick(L, s, t);
    return 0;
}

/* run(next_report) -> (what, t): 0 = STOP (done), 1 = a SYNC event is due (Python exchanges
 * usage, pushes the next one, then calls run again), 2 = time for a progress report */
static PyObject *SimLoop_run(SimLoopObject *L, PyObject *arg) {
    double next_report = PyFloat_AsDouble(arg);
    if (next_report == -1.0 && PyErr_Occurred()) return NULL;
    int what = 0, rc = 0;
    while (L->hlen) {
        sev e = sl_pop(L);
        double t = L->now = e.t;
        switch (e.kind) {
        case E_DONE:
            rc = sl_done(L, t, e.a, e.b);
            break;
        case E_WAKE:
            rc = sl_issue(L, e.a);
            break;
        case E_PHASE:
            if (L->jobs[e.a].running) rc = sl_start_burst(L, e.a);
            break;
        case E_SRVWAKE:
            if (t >= L->srv[e.a].wake_at) L->srv[e.a].wake_at = INFINITY;
            rc = sl_kick(L, e.a, t);
            break;
        case E_START: {
            sjob *j = &L->jobs[e.a];
            j->running = 1;
            if (j->nreq)
                rc = sl_push(L, t + j->period, E_PHASE, e.a, 0);
            else
                rc = sl_start_burst(L, e.a);
            break;
        }
        case E_END:
            L->jobs[e.a].running = 0;
            if (!L->jobs[e.a].outstanding) rc = sl_retire(L, e.a);
            break;
        case E_SYNC:
            what = 1;
            break;
        default:
            what = -1;
        }
        if (rc) {
            if (!PyErr_Occurred()) PyErr_NoMemory();
            return NULL;
        }
        if (what == -1) {
            what = 0;
            break;
        }
        if (what) break;
        if (t >= next_report) {
            what = 2;
            break;
        }
    }
    return Py_BuildValue("(id)", what, L->now);
}

static PyObject *SimLoop_push(SimLoopObject *L, PyObject *args) {
    double t;
    int kind, a = 0;
    long long seq = -1;
    if (!PyArg_ParseTuple(args, "di|iL", &t, &kind, &a, &seq)) return NULL;
    if (kind < E_DONE || kind > E_STOP || (kind >= E_PHASE && kind <= E_END && (a < 0 || a >= L->njobs))) {
        PyErr_SetString(PyExc_ValueError, "bad event");
        return NULL;
    }
    if ((seq >= 0 ? sl_push_seq(L, t, seq, kind, a, 0) : sl_push(L, t, kind, a, 0))) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *dvec_pairs(const dvec *d) {
    PyObject *out = PyList_New(d->len / 2);
    for (int64_t i = 0; out && i < d->len / 2; i++) {
        PyObject *t = Py_BuildValue("(dd)", d->v[2 * i], d->v[2 * i + 1]);
        if (!t) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, t);
    }
    return out;
}

/* usage() -> [(ops, outstanding)] per job, for the usage exchange */
static PyObject *SimLoop_usage(SimLoopObject *L, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(L->njobs);
    for (int32_t i = 0; out && i < L->njobs; i++)
        PyList_SET_ITEM(out, i, Py_BuildValue("(LL)", (long long)L->jobs[i].ops, (long long)L->jobs[i].outstanding));
    return out;
}

/* results() -> [(ops, outstanding, busy_start, win, busy, bursts)] per job */
static PyObject *SimLoop_results(SimLoopObject *L, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(L->njobs);
    for (int32_t i = 0; out && i < L->njobs; i++) {
        sjob *j = &L->jobs[i];
        PyObject *win = PyList_New(L->nwin);
        for (int64_t k = 0; win && k < L->nwin; k++) PyList_SET_ITEM(win, k, PyLong_FromLongLong(j->win[k]));
        PyObject *row = win ? Py_BuildValue("(LLdNNN)", (long long)j->ops, (long long)j->outstanding, j->busy_start,
                                            win, dvec_pairs(&j->busy), dvec_pairs(&j->bursts))
                            : NULL;
        if (!row) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, row);
    }
    return out;
}

static int parse_ints(PyObject *seq, int32_t **out, int32_t *n) {
    PyObject *fast = PySequence_Fast(seq, "a sequence of ints");
    if (!fast) return -1;
    *n = (int32_t)PySequence_Fast_GET_SIZE(fast);
    *out = malloc(sizeof(int32_t) * (size_t)(*n ? *n : 1));
    for (int32_t i = 0; *out && i < *n; i++) (*out)[i] = (int32_t)PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* SimLoop(schedulers, channels, overhead, inv_bw, inv_win, nwin, timed, jobs): jobs are
 * (servers, handles, nreq, nbytes, depth, think, period, nprocs, rng_state or None) */
static int SimLoop_init(SimLoopObject *L, PyObject *args, PyObject *Py_UNUSED(kw)) {
    PyObject *scheds, *jobs;
    long long channels, nwin;
    int timed;
    if (L->srv) {
        PyErr_SetString(PyExc_RuntimeError, "SimLoop is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O!LdddLpO!", &PyList_Type, &scheds, &channels, &L->overhead, &L->inv_bw,
                          &L->inv_win, &nwin, &timed, &PyList_Type, &jobs))
        return -1;
    Py_INCREF(scheds);
    L->scheds = scheds;
    L->nwin = nwin;
    L->timed = timed;
    L->free_req = -1;
    L->nsrv = (int32_t)PyList_GET_SIZE(scheds);
    L->srv = calloc((size_t)(L->nsrv ? L->nsrv : 1), sizeof(ssrv));
    L->njobs = (int32_t)PyList_GET_SIZE(jobs);
    L->jobs = calloc((size_t)(L->njobs ? L->njobs : 1), sizeof(sjob));
    if (!L->srv || !L->jobs) {
        PyErr_NoMemory();
        return -1;
    }
    for (int32_t s = 0; s < L->nsrv; s++) {
        ts_core *c = api_from_object(PyList_GET_ITEM(scheds, s));
        if (!c) return -1;
        if (c->shared) {
            PyErr_SetString(PyExc_ValueError, "a scheduler shared with C threads cannot be simulated");
            return -1;
        }
        L->srv[s] = (ssrv){c, 0, channels, INFINITY};
    }
    int64_t nprocs = 0;
    for (int32_t i = 0; i < L->njobs; i++) {
        PyObject *spec = PyList_GET_ITEM(jobs, i), *srvs, *handles, *state;
        sjob *j = &L->jobs[i];
        long long nreq, nbytes, depth;
        int np;
        int32_t nh;
        if (!PyArg_ParseTuple(spec, "OOLLLddiO", &srvs, &handles, &nreq, &nbytes, &depth, &j->think, &j->period, &np,
                              &state))
            return -1;
        if (parse_ints(srvs, &j->srv, &j->nsrv) || parse_ints(handles, &j->handle, &nh)) return -1;
        if (nh != j->nsrv || !j->nsrv) {
            PyErr_SetString(PyExc_ValueError, "one handle per server, at least one server");
            return -1;
        }
        for (int32_t k = 0; k < j->nsrv; k++)
            if (j->srv[k] < 0 || j->srv[k] >= L->nsrv) {
                PyErr_SetString(PyExc_ValueError, "server index out of range");
                return -1;
            }
        j->nreq = nreq;
        j->nbytes = nbytes;
        j->depth = depth;
        j->nprocs = np;
        j->proc0 = (int32_t)nprocs;
        nprocs += np;
        j->win = calloc((size_t)(nwin ? nwin : 1), sizeof(int64_t));
        if (!j->win) {
            PyErr_NoMemory();
            return -1;
        }
        if (state != Py_None) { /* random.Random.getstate()[1]: 624 words and the index */
            PyObject *fast = PySequence_Fast(state, "an MT19937 state");
            if (!fast) return -1;
            if (PySequence_Fast_GET_SIZE(fast) != MT_N + 1) {
                Py_DECREF(fast);
                PyErr_SetString(PyExc_ValueError, "an MT19937 state has 625 ints");
                return -1;
            }
            for (int k = 0; k < MT_N; k++) j->rng.mt[k] = (uint32_t)PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(fast, k));
            j->rng.mti = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, MT_N));
            Py_DECREF(fast);
            if (PyErr_Occurred()) return -1;
            j->random = 1;
        }
    }
    L->nprocs = (int32_t)nprocs;
    L->procs = calloc((size_t)(nprocs ? nprocs : 1), sizeof(sproc));
    if (!L->procs) {
        PyErr_NoMemory();
        return -1;
    }
    for (int32_t i = 0; i < L->njobs; i++)
        for (int32_t k = 0; k < L->jobs[i].nprocs; k++) {
            sproc *p = &L->procs[L->jobs[i].proc0 + k];
            p->job = i;
            p->pos = k;
        }
    return 0;
}

static void SimLoop_dealloc(SimLoopObject *L) {
    for (int32_t i = 0; L->jobs && i < L->njobs; i++) {
        free(L->jobs[i].srv);
        free(L->jobs[i].handle);
        free(L->jobs[i].win);
        free(L->jobs[i].busy.v);
        free(L->jobs[i].bursts.v);
    }
    free(L->jobs);
    free(L->srv);
    free(L->procs);
    free(L->reqs);
    free(L->heap);
    Py_XDECREF(L->scheds);
    Py_TYPE(L)->tp_free((PyObject *)L);
}

static PyObject *SimLoop_get_seq(SimLoopObject *L, void *Py_UNUSED(c)) { return PyLong_FromLongLong(L->seq); }
static int SimLoop_set_seq(SimLoopObject *L, PyObject *v, void *Py_UNUSED(c)) {
    long long seq = v ? PyLong_AsLongLong(v) : -1;
    if (seq == -1 && PyErr_Occurred()) return -1;
    L->seq = seq;
    return 0;
}
static PyObject *SimLoop_get_pending(SimLoopObject *L, void *Py_UNUSED(c)) { return PyLong_FromLongLong(L->hlen); }
static PyObject *SimLoop_get_chunks(SimLoopObject *L, void *Py_UNUSED(c)) { return PyLong_FromLongLong(L->chunks); }

static PyMethodDef SimLoop_methods[] = {
    {"run", (PyCFunction)SimLoop_run, METH_O, "run(next_report) -> (what, t): 0 stop, 1 sync, 2 report"},
    {"push", (PyCFunction)SimLoop_push, METH_VARARGS, "push(t, kind, a=0, seq=-1): queue an event"},
    {"usage", (PyCFunction)SimLoop_usage, METH_NOARGS, "usage() -> [(ops, outstanding)] per job"},
    {"results", (PyCFunction)SimLoop_results, METH_NOARGS,
     "results() -> [(ops, outstanding, busy_start, win, busy, bursts)] per job"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef SimLoop_getset[] = {
    {"seq", (getter)SimLoop_get_seq, (setter)SimLoop_set_seq, "events pushed so far (the last sequence number)", NULL},
    {"pending", (getter)SimLoop_get_pending, NULL, "events queued", NULL},
    {"chunks", (getter)SimLoop_get_chunks, NULL, "chunks dispatched", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SimLoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "themis.sched._core.SimLoop",
    .tp_basicsize = sizeof(SimLoopObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The I/O simulator's event loop over compiled schedulers (driven by themis.iosim).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SimLoop_init,
    .tp_dealloc = (destructor)SimLoop_dealloc,
    .tp_methods = SimLoop_methods,
    .tp_getset = SimLoop_getset,
};
