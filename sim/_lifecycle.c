/* The per-job life cycle of the common replay case, compiled (included by sim/_backfill.c,
 * one translation unit): trace jobs arriving (sim/job_mgr.py, _trace_job, _new_job,
 * _arrive, _check_eligible), jobs starting (_start_indices, _start) and jobs ending
 * (_release, _finish, _log_job). The Python methods are the reference; the simulator calls
 * these only where they apply (Simulator._life_ctx: one pool, no BackfillCycle, no
 * rejection at submission but the per-user count) and they call back into Python for a
 * job that needs more (a name, a dependency waiter). They change the same objects: the
 * SimJob slots, SimState's containers and counters, the fair-share arrays, the Record log.
 *
 * ctx: the tuple Simulator._life_ctx builds (its items: the LC_* indices below). */

/* ------------------------------------------------------------------ more job slots */

enum { J_ID, J_TIDX, J_RUNTIME, J_GROUP, J_NAME, J_SUBMIT, J_BEGIN, J_DEPS, J_SINGLETON, J_PART,
       J_EXIT, J_STATE, J_ELIGIBLE, J_START, J_END, J_BACKFILL, J_POOL, J_ALLOC, N_JSLOTS };
static const char *JSLOT_NAMES[N_JSLOTS] = {
    "id",   "tidx",      "runtime", "group",    "name",  "submit", "begin",    "deps", "has_singleton",
    "part", "exit_code", "state",   "eligible", "start", "end",    "backfill", "pool", "alloc",
};
static Py_ssize_t joff[N_JSLOTS];

/* The finished-job log's Record (a slots dataclass): its fields in constructor order. */
enum { R_JOB_ID, R_TIDX, R_USER, R_UNITS, R_LIMIT, R_SUBMIT, R_ELIGIBLE, R_START, R_END, R_STATE,
       R_BACKFILL, N_RSLOTS };
static const char *RSLOT_NAMES[N_RSLOTS] = {
    "job_id", "trace_index", "user", "units", "limit", "submit",
    "eligible", "start", "end", "state", "backfill",
};
static Py_ssize_t roff[N_RSLOTS];
static PyTypeObject *record_type = NULL;

/* SimState's attributes these use (read and written by slot offset), then those of its
 * parts and of the simulator (by name; interned once). */
enum { A_ORDER, A_PENDING, A_RUNNING, A_HEAP, A_ENDS, A_FREE, A_MINU, A_SEQ, A_NBF, A_USER_USE,
       A_NOW, A_MIN_UNITS, A_CURSOR, A_PRIO_TICK, A_FAIRSHARE, A_DEPS, A_AV_AT, A_KICK_AT,
       A_BF_DIRTY, A_BF_RAN_AT, A_FULL_MAIN_DUE, A_MAIN_DIRTY, A_CALC_NEXT, A_CAP, A_CG_UNTIL,
       A_MAIN_RAN_AT, N_STATE,
       A_WAITERS = N_STATE, A_ACCRUED, A_RUN_UNITS, A_STAMP, A_USAGE, A_TOTAL, A_SCALE,
       A_LAST, A_HALF_LIFE, A_TREE, A_ASSOCIATIONS,
       A_RELEASE, A_ARRIVE, A_TRACE_JOB, A_TRIM, A_CHECK_ELIGIBLE, A_JOB_ID,
       A_START_INDICES, A_ON_START, N_ATTRS };
static const char *ATTR_NAMES[N_ATTRS] = {
    "order", "pending", "running", "heap", "ends", "free", "minu", "seq", "n_backfilled",
    "user_use", "now", "min_units", "cursor", "prio_tick", "fairshare", "deps", "av_at",
    "kick_at", "bf_dirty", "bf_ran_at", "full_main_due", "main_dirty", "calc_next", "cap",
    "cg_until", "main_ran_at",
    "waiters", "accrued", "run_units", "stamp", "usage", "total", "scale", "last", "half_life",
    "tree", "associations", "_release",
    "_arrive", "_trace_job", "_trim_min_units", "_check_eligible", "id",
    "_start_indices", "on_start",
};
static Py_ssize_t soff[N_STATE];
static PyTypeObject *state_type = NULL;
static PyObject *attr_keys[N_ATTRS];
static PyObject *heappush_fn = NULL, *heappop_fn = NULL, *end_kind = NULL;

/* register_life(job_cls, record_cls, state_cls, end_kind): the slot offsets the life cycle
 * reads, and the job-end event kind (sim/engine_state.py, _END). */
static PyObject *register_life(PyObject *self, PyObject *args) {
    PyObject *jcls, *rcls, *scls, *kind;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyType_Type, &jcls, &PyType_Type, &rcls,
                          &PyType_Type, &scls, &PyLong_Type, &kind))
        return NULL;
    if (heappush_fn == NULL) {
        PyObject *heapq = PyImport_ImportModule("_heapq");
        if (heapq == NULL) return NULL;
        heappush_fn = PyObject_GetAttrString(heapq, "heappush");
        heappop_fn = PyObject_GetAttrString(heapq, "heappop");
        Py_DECREF(heapq);
        if (heappush_fn == NULL || heappop_fn == NULL) return NULL;
    }
    for (int k = 0; k < N_ATTRS; k++)
        if (attr_keys[k] == NULL && (attr_keys[k] = PyUnicode_InternFromString(ATTR_NAMES[k])) == NULL)
            return NULL;
    Py_XSETREF(end_kind, Py_NewRef(kind));
    for (int f = 0; f < N_JSLOTS; f++)
        if (slot_offset(jcls, JSLOT_NAMES[f], &joff[f]) < 0) return NULL;
    for (int f = 0; f < N_RSLOTS; f++)
        if (slot_offset(rcls, RSLOT_NAMES[f], &roff[f]) < 0) return NULL;
    for (int k = 0; k < N_STATE; k++)
        if (slot_offset(scls, ATTR_NAMES[k], &soff[k]) < 0) return NULL;
    Py_XSETREF(state_type, (PyTypeObject *)Py_NewRef(scls));
    Py_XSETREF(record_type, (PyTypeObject *)Py_NewRef(rcls));
    Py_RETURN_NONE;
}

static inline PyObject *jget(PyObject *job, int f) {
    return *(PyObject **)((char *)job + joff[f]);
}

/* Set an object slot at `off`, stealing `value` (NULL: an exception is set, -1). */
static inline int put(PyObject *obj, Py_ssize_t off, PyObject *value) {
    if (value == NULL) return -1;
    PyObject **p = (PyObject **)((char *)obj + off);
    PyObject *old = *p;
    *p = value;
    Py_XDECREF(old);
    return 0;
}

/* The same with a borrowed `value`. */
static inline int put_b(PyObject *obj, Py_ssize_t off, PyObject *value) {
    Py_INCREF(value);
    return put(obj, off, value);
}

static inline int jread_ll(PyObject *job, int f, long long *out) {
    PyObject *o = jget(job, f);
    if (o == NULL) {
        PyErr_Format(PyExc_AttributeError, "job field %s is unset", JSLOT_NAMES[f]);
        return -1;
    }
    return read_ll(o, out);
}

static inline int jread_d(PyObject *job, int f, double *out) {
    PyObject *o = jget(job, f);
    if (o == NULL) {
        PyErr_Format(PyExc_AttributeError, "job field %s is unset", JSLOT_NAMES[f]);
        return -1;
    }
    return read_double(o, out);
}

/* ------------------------------------------------------------------ the context */

enum { LC_SIM, LC_RUNNING, LC_PENDING, LC_TIMEOUT, LC_FAILED, LC_COMPLETED, LC_RES,
       LC_COUNT_RUN, LC_NODE_DIV, LC_CPU_MUL, LC_COUNT_SUBMIT, LC_W_FS, LC_LOG, LC_FIN_POS,
       LC_ARRAYS, LC_STATIC, LC_PART, LC_TIER, LC_GENERAL, LC_MULTIFACTOR, LC_W_AGE,
       LC_MAX_AGE, LC_EMPTY, LC_NAN, N_LC };

typedef struct {
    PyObject *t;  /* the ctx tuple (borrowed) */
    PyObject *sim, *st;
    double res, w_fs, w_age, max_age;
    long long node_div, cpu_mul;
    int count_run, count_submit, general, multifactor;
} Life;

static int life_parse(PyObject *ctx, PyObject *st, Life *L) {
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != N_LC) {
        PyErr_SetString(PyExc_TypeError, "life cycle: a bad context tuple");
        return -1;
    }
    if (record_type == NULL || job_type == NULL || heappush_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "life cycle: register_life() first");
        return -1;
    }
    if (Py_TYPE(st) != state_type) {
        PyErr_SetString(PyExc_TypeError, "life cycle: not a state of the registered class");
        return -1;
    }
    L->t = ctx;
    L->sim = PyTuple_GET_ITEM(ctx, LC_SIM);
    L->st = st;
    if (read_double(PyTuple_GET_ITEM(ctx, LC_RES), &L->res) < 0 ||
        read_double(PyTuple_GET_ITEM(ctx, LC_W_FS), &L->w_fs) < 0 ||
        read_double(PyTuple_GET_ITEM(ctx, LC_W_AGE), &L->w_age) < 0 ||
        read_double(PyTuple_GET_ITEM(ctx, LC_MAX_AGE), &L->max_age) < 0 ||
        read_ll(PyTuple_GET_ITEM(ctx, LC_NODE_DIV), &L->node_div) < 0 ||
        read_ll(PyTuple_GET_ITEM(ctx, LC_CPU_MUL), &L->cpu_mul) < 0)
        return -1;
    L->count_run = PyObject_IsTrue(PyTuple_GET_ITEM(ctx, LC_COUNT_RUN));
    L->count_submit = PyObject_IsTrue(PyTuple_GET_ITEM(ctx, LC_COUNT_SUBMIT));
    L->general = PyObject_IsTrue(PyTuple_GET_ITEM(ctx, LC_GENERAL));
    L->multifactor = PyObject_IsTrue(PyTuple_GET_ITEM(ctx, LC_MULTIFACTOR));
    if (L->node_div < 1) {
        PyErr_SetString(PyExc_ValueError, "life cycle: units per node must be >= 1");
        return -1;
    }
    return 0;
}

static inline PyObject *lc(const Life *L, int k) { return PyTuple_GET_ITEM(L->t, k); }

/* A SimState attribute (a new reference) and its integer/float forms. */
static inline PyObject *st_get(const Life *L, int k) {
    PyObject *o = *(PyObject **)((char *)L->st + soff[k]);
    if (o == NULL) {
        PyErr_Format(PyExc_AttributeError, "state.%s is unset", ATTR_NAMES[k]);
        return NULL;
    }
    Py_INCREF(o);
    return o;
}

/* Set a SimState attribute to `value` (stolen; NULL: an exception is set). */
static inline int st_put(const Life *L, int k, PyObject *value) {
    return put(L->st, soff[k], value);
}

static int st_ll(const Life *L, int k, long long *out) {
    PyObject *o = st_get(L, k);
    if (o == NULL) return -1;
    int r = read_ll(o, out);
    Py_DECREF(o);
    return r;
}

static int st_set_ll(const Life *L, int k, long long v) {
    return st_put(L, k, PyLong_FromLongLong(v));
}

/* The list or dict a SimState attribute holds (borrowed from `st`, which keeps it). */
static PyObject *st_container(const Life *L, int k, PyTypeObject *type) {
    PyObject *o = st_get(L, k);
    if (o == NULL) return NULL;
    Py_DECREF(o);
    if (Py_TYPE(o) != type) {
        PyErr_Format(PyExc_TypeError, "state.%s: expected a %s", ATTR_NAMES[k], type->tp_name);
        return NULL;
    }
    return o;
}

/* ------------------------------------------------------------------ shared steps */

/* The user's [running jobs, nodes, CPUs, submitted] in user_use (made when missing). */
static PyObject *use_entry(PyObject *user_use, PyObject *user) {
    PyObject *use = PyDict_GetItemWithError(user_use, user);
    if (use != NULL || PyErr_Occurred()) return use;
    use = Py_BuildValue("[iiii]", 0, 0, 0, 0);
    if (use == NULL || PyDict_SetItem(user_use, user, use) < 0) {
        Py_XDECREF(use);
        return NULL;
    }
    Py_DECREF(use); /* the dict holds it */
    return use;
}

static int use_add(PyObject *use, int k, long long add) {
    long long v;
    if (!PyList_Check(use) || PyList_GET_SIZE(use) < 4) {
        PyErr_SetString(PyExc_TypeError, "user_use: expected lists [jobs, nodes, cpus, submitted]");
        return -1;
    }
    if (read_ll(PyList_GET_ITEM(use, k), &v) < 0) return -1;
    PyObject *o = PyLong_FromLongLong(v + add);
    return o == NULL ? -1 : PyList_SetItem(use, k, o); /* steals o */
}

/* _count_start(job, state.user_use, sign): the running job's count, nodes and CPUs. */
static int count_run(const Life *L, PyObject *user_use, PyObject *job, long long units, int sign) {
    PyObject *use = use_entry(user_use, slot(job, F_USER));
    if (use == NULL) return -1;
    long long nodes = (units + L->node_div - 1) / L->node_div, cpus = units * L->cpu_mul;
    return (use_add(use, 0, sign) < 0 || use_add(use, 1, sign * nodes) < 0 ||
            use_add(use, 2, sign * cpus) < 0) ? -1 : 0;
}

/* The user's submitted-jobs count (_use(user)[3]) changes by `add`. */
static int count_submit(const Life *L, PyObject *user, long long add) {
    PyObject *user_use = st_container(L, A_USER_USE, &PyDict_Type);
    if (user_use == NULL) return -1;
    PyObject *use = use_entry(user_use, user);
    return use == NULL ? -1 : use_add(use, 3, add);
}

/* FairShare.change(user, delta, now) on the arrays' memory; a user past their end goes
 * to the Python method (it grows them). */
static int fs_change(const Life *L, long long user, PyObject *user_o, long long delta, double now) {
    PyObject *fs = st_get(L, A_FAIRSHARE);
    if (fs == NULL) return -1;
    PyObject *arr[3] = {NULL, NULL, NULL};
    Py_buffer v[3];
    int got = 0, r = -1;
    for (; got < 3; got++) {
        arr[got] = PyObject_GetAttr(fs, attr_keys[A_ACCRUED + got]);
        if (arr[got] == NULL) goto done;
        if (PyObject_GetBuffer(arr[got], &v[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            Py_CLEAR(arr[got]);
            goto done;
        }
        if (v[got].format == NULL || strcmp(v[got].format, "d") != 0 || v[got].ndim != 1) {
            PyBuffer_Release(&v[got]);
            Py_CLEAR(arr[got]);
            PyErr_SetString(PyExc_TypeError, "fair share: expected 1-d float64 arrays");
            goto done;
        }
    }
    if (user < 0 || user >= v[0].shape[0] || user >= v[1].shape[0] || user >= v[2].shape[0]) {
        PyObject *res = PyObject_CallMethod(fs, "change", "OLd", user_o, delta, now);
        r = res == NULL ? -1 : 0;
        Py_XDECREF(res);
        goto done;
    }
    double *acc = v[0].buf, *run = v[1].buf, *stamp = v[2].buf;
    acc[user] += run[user] * (now - stamp[user]);
    stamp[user] = now;
    run[user] += (double)delta;
    r = 0;
done:
    for (int k = 0; k < got; k++) {
        PyBuffer_Release(&v[k]);
        Py_DECREF(arr[k]);
    }
    Py_DECREF(fs);
    return r;
}

/* The entry (t, seq, ...) of a list of tuples sorted by (float, int) keys: the first index
 * whose key is >= (t, seq) (bisect_left; `right`: > (t, seq), bisect_right). */
static int bisect_ends(PyObject *ends, double t, long long seq, int right, Py_ssize_t *at) {
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(ends);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) >> 1;
        PyObject *e = PyList_GET_ITEM(ends, mid);
        double et;
        long long es;
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 3) {
            PyErr_SetString(PyExc_TypeError, "ends: expected (end, seq, units) tuples");
            return -1;
        }
        if (read_double(PyTuple_GET_ITEM(e, 0), &et) < 0 ||
            read_ll(PyTuple_GET_ITEM(e, 1), &es) < 0)
            return -1;
        int below = et < t || (et == t && (es < seq || (right && es == seq)));
        if (below) lo = mid + 1; else hi = mid;
    }
    *at = lo;
    return 0;
}

/* Call a heapq function on (heap, item) or (heap,): a new reference, NULL on error. */
static PyObject *heap_call(PyObject *fn, PyObject *heap, PyObject *item) {
    PyObject *args[2] = {heap, item};
    return PyObject_Vectorcall(fn, args, item ? 2 : 1, NULL);
}

static int heap_push(PyObject *heap, PyObject *item) {
    if (item == NULL) return -1;
    PyObject *r = heap_call(heappush_fn, heap, item);
    Py_DECREF(item);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* ------------------------------------------------------------------ starts */

/* _start(job, backfill) of a job already out of the queue: the counters are the caller's. */
static int start_one(const Life *L, PyObject *job, int backfill, PyObject *now_o, double now,
                     PyObject *c[4], long long *free_units, long long *seq) {
    PyObject *pending = c[0], *running = c[1], *heap = c[2], *ends = c[3];
    long long units, user;
    double limit, runtime;
    if (check_job(job) < 0 || read_ll(slot(job, F_UNITS), &units) < 0 ||
        read_double(slot(job, F_LIMIT), &limit) < 0 || jread_d(job, J_RUNTIME, &runtime) < 0 ||
        read_ll(slot(job, F_USER), &user) < 0)
        return -1;
    PyObject *jid = jget(job, J_ID);
    if (jid == NULL) {
        PyErr_SetString(PyExc_AttributeError, "job field id is unset");
        return -1;
    }
    if (L->count_run) {
        PyObject *user_use = st_container(L, A_USER_USE, &PyDict_Type);
        if (user_use == NULL || count_run(L, user_use, job, units, 1) < 0) return -1;
    }
    if (put_b(job, joff[J_STATE], lc(L, LC_RUNNING)) < 0 || put_b(job, joff[J_START], now_o) < 0 ||
        put_b(job, joff[J_BACKFILL], backfill ? Py_True : Py_False) < 0)
        return -1;
    *free_units -= units;
    if (*free_units < 0) {
        PyErr_Format(PyExc_AssertionError, "over-allocation starting job %S", jid);
        return -1;
    }
    if (PyDict_DelItem(pending, jid) < 0 || PyDict_SetItem(running, jid, job) < 0) return -1;
    double end = now + (limit < runtime ? limit : runtime);
    PyObject *end_o = PyFloat_FromDouble(end);
    if (end_o == NULL) return -1;
    Py_INCREF(end_o);
    if (put(job, joff[J_END], end_o) < 0) {
        Py_DECREF(end_o);
        return -1;
    }
    *seq += 1;
    if (heap_push(heap, Py_BuildValue("(NOLO)", end_o, end_kind, *seq, job)) < 0) return -1;
    /* insort(state.ends, (_map_end(now, limit), job.seq, units)) */
    long long jseq;
    double mend = round_end(now + limit, L->res);
    Py_ssize_t at;
    if (read_ll(slot(job, F_SEQ), &jseq) < 0 || bisect_ends(ends, mend, jseq, 1, &at) < 0)
        return -1;
    PyObject *entry = Py_BuildValue("(dOO)", mend, slot(job, F_SEQ), slot(job, F_UNITS));
    if (entry == NULL) return -1;
    int r = PyList_Insert(ends, at, entry);
    Py_DECREF(entry);
    if (r < 0) return -1;
    if (L->w_fs != 0.0 && fs_change(L, user, slot(job, F_USER), units, now) < 0) return -1;
    return 0;
}

/* Take the jobs at `idx` (ascending) out of state.order, then start each in that order. */
static int start_core(const Life *L, PyObject *idx, int backfill) {
    PyObject *order = st_container(L, A_ORDER, &PyList_Type);
    PyObject *c[4] = {st_container(L, A_PENDING, &PyDict_Type),
                      st_container(L, A_RUNNING, &PyDict_Type),
                      st_container(L, A_HEAP, &PyList_Type), st_container(L, A_ENDS, &PyList_Type)};
    if (order == NULL || !c[0] || !c[1] || !c[2] || !c[3]) return -1;
    Py_ssize_t n = PyList_GET_SIZE(idx), n_order = PyList_GET_SIZE(order);
    PyObject **jobs = PyMem_Calloc((size_t)(n ? n : 1), sizeof(PyObject *));
    if (jobs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *now_o = NULL;
    int ret = -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t i;
        if (read_index(idx, k, n_order, &i) < 0) goto done;
        jobs[k] = PyList_GET_ITEM(order, i);
        Py_INCREF(jobs[k]);
    }
    for (Py_ssize_t k = n - 1; k >= 0; k--) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(idx, k));
        if (PyList_SetSlice(order, i, i + 1, NULL) < 0) goto done;
    }
    long long free_units, seq, nbf;
    double now;
    if (st_ll(L, A_FREE, &free_units) < 0 || st_ll(L, A_SEQ, &seq) < 0 ||
        st_ll(L, A_NBF, &nbf) < 0 || (now_o = st_get(L, A_NOW)) == NULL ||
        read_double(now_o, &now) < 0)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (start_one(L, jobs[k], backfill, now_o, now, c, &free_units, &seq) < 0) goto done;
        nbf += backfill;
    }
    if (st_set_ll(L, A_FREE, free_units) < 0 || st_set_ll(L, A_SEQ, seq) < 0 ||
        st_set_ll(L, A_NBF, nbf) < 0 || (n && st_set_ll(L, A_MINU, -1) < 0))
        goto done;
    ret = 0;
done:
    for (Py_ssize_t k = 0; k < n; k++) Py_XDECREF(jobs[k]);
    PyMem_Free(jobs);
    Py_XDECREF(now_o);
    return ret;
}

/* start_jobs(ctx, state, idx, backfill) -> None
 * _start_indices(idx, backfill): take the jobs at `idx` (ascending) out of state.order,
 * then start each in that order. The caller checks that no job waits on a start (no
 * dependency waiters) and that there is no on_start hook. */
static PyObject *start_jobs(PyObject *self, PyObject *args) {
    PyObject *ctx, *st, *idx;
    int backfill;
    Life L;
    if (!PyArg_ParseTuple(args, "OOO!p", &ctx, &st, &PyList_Type, &idx, &backfill) ||
        life_parse(ctx, st, &L) < 0 || start_core(&L, idx, backfill) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ ends */

/* A new Record (_log_job) appended to the log, its index in fin_pos. */
static int log_job(const Life *L, PyObject *job, PyObject *state, PyObject *end_o) {
    PyObject *log = lc(L, LC_LOG), *fin_pos = lc(L, LC_FIN_POS);
    PyObject *rec = record_type->tp_alloc(record_type, 0);
    if (rec == NULL) return -1;
    PyObject *vals[N_RSLOTS] = {
        jget(job, J_ID),       jget(job, J_TIDX),  slot(job, F_USER), slot(job, F_UNITS),
        slot(job, F_LIMIT),    jget(job, J_SUBMIT), jget(job, J_ELIGIBLE), jget(job, J_START),
        end_o,                 state,              jget(job, J_BACKFILL),
    };
    for (int f = 0; f < N_RSLOTS; f++) {
        if (vals[f] == NULL) {
            Py_DECREF(rec);
            PyErr_Format(PyExc_AttributeError, "record field %s: its job field is unset",
                         RSLOT_NAMES[f]);
            return -1;
        }
        put_b(rec, roff[f], vals[f]);
    }
    /* frozen, of numbers and an enum member: no cycle can pass through it, so the cyclic
     * collector need not visit the log's records again and again */
    if (PyObject_IS_GC(rec)) PyObject_GC_UnTrack(rec);
    PyObject *pos = PyLong_FromSsize_t(PyList_GET_SIZE(log));
    int r = (pos == NULL || PyDict_SetItem(fin_pos, vals[R_JOB_ID], pos) < 0 ||
             PyList_Append(log, rec) < 0) ? -1 : 0;
    Py_XDECREF(pos);
    Py_DECREF(rec);
    return r;
}

/* _release(job, state) + _finish + _log_job of a job without a name or waiters. */
static int release_plain(const Life *L, PyObject *job, PyObject *state, PyObject *now_o,
                         double now) {
    long long units, user, seq, free_units;
    double start, limit;
    if (read_ll(slot(job, F_UNITS), &units) < 0 || read_ll(slot(job, F_USER), &user) < 0 ||
        read_ll(slot(job, F_SEQ), &seq) < 0 || read_double(slot(job, F_LIMIT), &limit) < 0 ||
        jread_d(job, J_START, &start) < 0 || st_ll(L, A_FREE, &free_units) < 0 ||
        st_set_ll(L, A_FREE, free_units + units) < 0)
        return -1;
    if (L->count_run) {
        PyObject *user_use = st_container(L, A_USER_USE, &PyDict_Type);
        if (user_use == NULL || count_run(L, user_use, job, units, -1) < 0) return -1;
    }
    PyObject *ends = st_container(L, A_ENDS, &PyList_Type);
    Py_ssize_t at;
    if (ends == NULL || bisect_ends(ends, round_end(start + limit, L->res), seq, 0, &at) < 0 ||
        PyList_SetSlice(ends, at, at + 1, NULL) < 0)
        return -1;
    if (L->w_fs != 0.0 && fs_change(L, user, slot(job, F_USER), -units, now) < 0) return -1;
    if (L->count_submit && count_submit(L, slot(job, F_USER), -1) < 0) return -1;
    if (put_b(job, joff[J_STATE], state) < 0) return -1;
    return log_job(L, job, state, now_o);
}

/* Whether a job's end needs the Python path: a name (singleton groups) or waiters. */
static int needs_python_end(const Life *L, PyObject *job, PyObject *jid) {
    PyObject *name = jget(job, J_NAME);
    if (name == NULL || !PyUnicode_Check(name) || PyUnicode_GET_LENGTH(name) != 0) return 1;
    PyObject *deps = st_get(L, A_DEPS);
    if (deps == NULL) return -1;
    PyObject *waiters = PyObject_GetAttr(deps, attr_keys[A_WAITERS]);
    Py_DECREF(deps);
    if (waiters == NULL) return -1;
    int r = PyDict_Check(waiters) ? PyDict_Contains(waiters, jid) : 1;
    Py_DECREF(waiters);
    return r;
}

/* One popped end event's job: ended unless cancelled (a negative runtime, or not running). */
static int end_one(const Life *L, PyObject *job, PyObject *running, PyObject *now_o, double now) {
    double runtime, limit;
    long long exit_code;
    if (check_job(job) < 0 || jread_d(job, J_RUNTIME, &runtime) < 0) return -1;
    if (!(runtime >= 0)) return 0;
    PyObject *jid = jget(job, J_ID);
    int live = jid == NULL ? -1 : PyDict_Contains(running, jid);
    if (live <= 0) return live;
    if (PyDict_DelItem(running, jid) < 0 || read_double(slot(job, F_LIMIT), &limit) < 0 ||
        jread_ll(job, J_EXIT, &exit_code) < 0)
        return -1;
    PyObject *state = lc(L, runtime > limit ? LC_TIMEOUT : exit_code ? LC_FAILED : LC_COMPLETED);
    int py = needs_python_end(L, job, jid);
    if (py < 0) return -1;
    if (!py) return release_plain(L, job, state, now_o, now);
    PyObject *r = PyObject_CallMethodObjArgs(L->sim, attr_keys[A_RELEASE], job, state, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* end_jobs' work: how many end events were popped, -1 with an exception. */
static long long ends_due(const Life *L, double t) {
    PyObject *heap = st_container(L, A_HEAP, &PyList_Type);
    PyObject *running = st_container(L, A_RUNNING, &PyDict_Type);
    PyObject *now_o = st_get(L, A_NOW);
    if (heap == NULL || running == NULL || now_o == NULL) {
        Py_XDECREF(now_o);
        return -1;
    }
    long long popped = 0, end = PyLong_AsLongLong(end_kind);
    int ok = 1;
    while (ok && PyList_GET_SIZE(heap) > 0) {
        PyObject *top = PyList_GET_ITEM(heap, 0);
        double et;
        long long kind;
        if (!PyTuple_Check(top) || PyTuple_GET_SIZE(top) != 4 ||
            read_double(PyTuple_GET_ITEM(top, 0), &et) < 0 ||
            read_ll(PyTuple_GET_ITEM(top, 1), &kind) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "heap: expected 4-tuples");
            ok = 0;
            break;
        }
        if (et != t || kind != end) break;
        PyObject *item = heap_call(heappop_fn, heap, NULL);
        if (item == NULL) {
            ok = 0;
            break;
        }
        popped++;
        ok = end_one(L, PyTuple_GET_ITEM(item, 3), running, now_o, t) == 0;
        Py_DECREF(item);
    }
    Py_DECREF(now_o);
    return ok ? popped : -1;
}

/* end_jobs(ctx, state, t) -> int
 * The job-end events due at `t` (= state.now) at the top of state.heap: each popped, and
 * its job, unless cancelled, taken out of state.running and released (_release) as
 * TIMEOUT, FAILED or COMPLETED, as the event loop does. Returns how many were popped. */
static PyObject *end_jobs(PyObject *self, PyObject *args) {
    PyObject *ctx, *st;
    double t;
    Life L;
    if (!PyArg_ParseTuple(args, "OOd", &ctx, &st, &t) || life_parse(ctx, st, &L) < 0) return NULL;
    long long popped = ends_due(&L, t);
    return popped < 0 ? NULL : PyLong_FromLongLong(popped);
}

/* ------------------------------------------------------------------ arrivals */

/* The trace's columns (_TraceArrays), as the context holds them. */
enum { T_SUBMIT, T_ID, T_UNITS, T_LIMIT, T_RUNTIME, T_USER, T_GROUP, T_EXIT, T_NAMES, N_TCOLS };

/* PriorityModel.priority(static, accrue, user, calc) of a job that accrues from `accrue`. */
static int arrival_priority(const Life *L, double p, double accrue, long long user, double calc,
                            long long *prio) {
    *prio = 1;
    if (!L->multifactor) return 0;
    if (L->w_age != 0.0 && !isnan(accrue)) {
        double age = calc - accrue;
        if (0.0 > age) age = 0.0;
        if (L->max_age < age) age = L->max_age;
        p += L->w_age * (L->max_age > 0 ? age / L->max_age : 1.0);
    }
    if (L->w_fs != 0.0) {
        PyObject *fs = st_get(L, A_FAIRSHARE);
        if (fs == NULL) return -1;
        double total, scale, f = 1.0;
        PyObject *to = PyObject_GetAttr(fs, attr_keys[A_TOTAL]);
        PyObject *so = PyObject_GetAttr(fs, attr_keys[A_SCALE]);
        PyObject *uo = PyObject_GetAttr(fs, attr_keys[A_USAGE]);
        PyObject *tr = PyObject_GetAttr(fs, attr_keys[A_TREE]);
        PyObject *ao = tr == NULL ? NULL : PyObject_GetAttr(fs, attr_keys[A_ASSOCIATIONS]);
        Py_DECREF(fs);
        int tree = tr == NULL ? -1 : PyObject_IsTrue(tr);
        Py_ssize_t associations = ao == NULL ? -1 : PyLong_AsSsize_t(ao);
        int bad = to == NULL || so == NULL || uo == NULL || tree < 0 || ao == NULL ||
                  (associations == -1 && PyErr_Occurred()) ||
                  read_double(to, &total) < 0 || read_double(so, &scale) < 0;
        Py_buffer v = {0};
        FsView fsv = {NULL, 0, 1, 0.0, 1.0, 0, 0};
        if (!bad && total > 0) {  /* FairShare.factor */
            bad = fs_view(uo, &v, &fsv) < 0;
            fsv.total = total;
            fsv.scale = scale;
            fsv.tree = tree;
            fsv.associations = associations;
            if (!bad && user >= 0 && user < fsv.n)
                f = tree ? fs_tree_one(&fsv, user) : exp2(-(fsv.v[user] / total) * scale);
            if (fsv.v) PyBuffer_Release(&v);
        }
        Py_XDECREF(to);
        Py_XDECREF(so);
        Py_XDECREF(uo);
        Py_XDECREF(tr);
        Py_XDECREF(ao);
        if (bad) return -1;
        p += L->w_fs * f;
    }
    *prio = (long long)p;
    if (*prio < 1) *prio = 1;
    return 0;
}

/* The static priority part of a trace job of `units` (PriorityModel.static_part, cached
 * per units in the context's dict; a borrowed reference). */
static PyObject *static_of(const Life *L, PyObject *units) {
    PyObject *cache = PyTuple_GET_ITEM(lc(L, LC_STATIC), 0);
    PyObject *v = PyDict_GetItemWithError(cache, units);
    if (v != NULL || PyErr_Occurred()) return v;
    v = PyObject_CallOneArg(PyTuple_GET_ITEM(lc(L, LC_STATIC), 1), units);
    if (v == NULL) return NULL;
    int r = PyDict_SetItem(cache, units, v);
    Py_DECREF(v);
    return r < 0 ? NULL : v;
}

/* _new_job of trace job i (with seq, submit, eligibility and priority of its arrival). */
static PyObject *new_trace_job(const Life *L, PyObject *cols, Py_ssize_t i, PyObject *name,
                               PyObject *now_o, long long seq, long long prio, PyObject *stat) {
    PyObject *job = job_type->tp_alloc(job_type, 0);
    if (job == NULL) return NULL;
#define COL(k) PyList_GET_ITEM(PyTuple_GET_ITEM(cols, k), i)
    PyObject *nan = lc(L, LC_NAN);
    long long tier;
    if (read_ll(lc(L, LC_TIER), &tier) < 0) goto fail;
    int bad = put_b(job, joff[J_ID], COL(T_ID)) < 0 || put(job, joff[J_TIDX], PyLong_FromSsize_t(i)) < 0 ||
              put_b(job, offsets[F_UNITS], COL(T_UNITS)) < 0 ||
              put_b(job, offsets[F_LIMIT], COL(T_LIMIT)) < 0 ||
              put_b(job, joff[J_RUNTIME], COL(T_RUNTIME)) < 0 ||
              put_b(job, offsets[F_USER], COL(T_USER)) < 0 ||
              put_b(job, joff[J_GROUP], COL(T_GROUP)) < 0 || put_b(job, joff[J_NAME], name) < 0 ||
              put_b(job, joff[J_SUBMIT], now_o) < 0 || put_b(job, joff[J_BEGIN], Py_None) < 0 ||
              put(job, joff[J_DEPS], PyList_New(0)) < 0 ||
              put_b(job, joff[J_SINGLETON], Py_False) < 0 ||
              put_b(job, joff[J_PART], lc(L, LC_PART)) < 0 ||
              put_b(job, offsets[F_TIER], lc(L, LC_TIER)) < 0 ||
              put_b(job, offsets[F_STATIC], stat) < 0 || put_b(job, joff[J_EXIT], COL(T_EXIT)) < 0 ||
              put_b(job, joff[J_STATE], lc(L, LC_PENDING)) < 0 ||
              put_b(job, joff[J_ELIGIBLE], now_o) < 0 || put_b(job, offsets[F_ACCRUE], now_o) < 0 ||
              put_b(job, joff[J_START], nan) < 0 || put_b(job, joff[J_END], nan) < 0 ||
              put(job, offsets[F_SEQ], PyLong_FromLongLong(seq)) < 0 ||
              put(job, offsets[F_PRIO], PyLong_FromLongLong(prio)) < 0 ||
              put(job, offsets[F_KEY], Py_BuildValue("(LLL)", -tier, -prio, seq)) < 0 ||
              put_b(job, joff[J_BACKFILL], Py_False) < 0;
#undef COL
    if (!bad && L->general)
        bad = put(job, joff[J_POOL], PyTuple_New(0)) < 0 || put_b(job, joff[J_ALLOC], Py_None) < 0;
    if (!bad) return job;
fail:
    Py_DECREF(job);
    return NULL;
}

/* _arrive(_trace_job(i)) of a job without a name: it arrives and is eligible at once. */
static int arrive_plain(const Life *L, PyObject *cols, Py_ssize_t i, PyObject *name,
                        PyObject *now_o, double now) {
    long long seq, minu, user;
    double prio_tick, stat_d;
    PyObject *units = PyList_GET_ITEM(PyTuple_GET_ITEM(cols, T_UNITS), i);
    PyObject *user_o = PyList_GET_ITEM(PyTuple_GET_ITEM(cols, T_USER), i);
    PyObject *stat = static_of(L, units), *pt = st_get(L, A_PRIO_TICK);
    int bad = stat == NULL || pt == NULL || read_double(pt, &prio_tick) < 0 ||
              read_double(stat, &stat_d) < 0 || read_ll(user_o, &user) < 0 ||
              st_ll(L, A_SEQ, &seq) < 0 || st_ll(L, A_MINU, &minu) < 0;
    Py_XDECREF(pt);
    if (bad) return -1;
    if (L->count_submit && count_submit(L, user_o, 1) < 0) return -1;
    seq += 1;
    long long prio;
    double calc = prio_tick > -INFINITY ? prio_tick : now;  /* _prio_calc_time */
    if (arrival_priority(L, stat_d, now, user, calc, &prio) < 0) return -1;
    PyObject *job = new_trace_job(L, cols, i, name, now_o, seq, prio, stat);
    if (job == NULL) return -1;
    long long u;
    PyObject *pending = st_container(L, A_PENDING, &PyDict_Type);
    PyObject *order = st_container(L, A_ORDER, &PyList_Type);
    PyObject *h = st_container(L, A_MIN_UNITS, &PyList_Type);
    bad = pending == NULL || order == NULL || h == NULL || read_ll(units, &u) < 0 ||
          st_set_ll(L, A_SEQ, seq) < 0 || PyDict_SetItem(pending, jget(job, J_ID), job) < 0 ||
          insort_job(order, job) < 0 ||
          heap_push(h, Py_BuildValue("(OOO)", units, slot(job, F_SEQ), jget(job, J_ID))) < 0 ||
          (u < minu && st_set_ll(L, A_MINU, u) < 0);
    Py_DECREF(job);
    if (bad) return -1;
    if (PyList_GET_SIZE(h) > 2 * PyList_GET_SIZE(order) + 64) {  /* drop stale entries */
        PyObject *r = PyObject_CallMethodNoArgs(L->sim, attr_keys[A_TRIM]);
        Py_XDECREF(r);
        if (r == NULL) return -1;
    }
    return 0;
}

/* One trace job's arrival: compiled without a name, else _arrive(_trace_job(i)). */
static int arrive_one(const Life *L, PyObject *cols, Py_ssize_t i, PyObject *now_o, double now) {
    PyObject *names = PyTuple_GET_ITEM(cols, T_NAMES);
    PyObject *name = PyList_GET_SIZE(names) ? PyList_GET_ITEM(names, i) : lc(L, LC_EMPTY);
    if (PyUnicode_Check(name) && PyUnicode_GET_LENGTH(name) == 0)
        return arrive_plain(L, cols, i, name, now_o, now);
    PyObject *io = PyLong_FromSsize_t(i);
    if (io == NULL) return -1;
    PyObject *job = PyObject_CallMethodObjArgs(L->sim, attr_keys[A_TRACE_JOB], io, NULL);
    Py_DECREF(io);
    if (job == NULL) return -1;
    PyObject *r = PyObject_CallMethodObjArgs(L->sim, attr_keys[A_ARRIVE], job, NULL);
    Py_DECREF(job);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* The trace jobs submitted at `t` (= state.now) from state.cursor on arrive, in trace
 * order; state.cursor moves past them. How many arrived, -1 with an exception. */
static long long arrivals_due(const Life *L, double t) {
    PyObject *cols = lc(L, LC_ARRAYS);
    if (cols == Py_None) return 0;  /* no trace */
    if (!PyTuple_Check(cols) || PyTuple_GET_SIZE(cols) != N_TCOLS) {
        PyErr_SetString(PyExc_TypeError, "life cycle: bad trace columns");
        return -1;
    }
    for (int k = 0; k < N_TCOLS; k++) {
        if (!PyList_Check(PyTuple_GET_ITEM(cols, k))) {
            PyErr_SetString(PyExc_TypeError, "life cycle: trace columns must be lists");
            return -1;
        }
    }
    PyObject *submit = PyTuple_GET_ITEM(cols, T_SUBMIT);
    Py_ssize_t n = PyList_GET_SIZE(submit);
    for (int k = 1; k < T_NAMES; k++) {
        if (PyList_GET_SIZE(PyTuple_GET_ITEM(cols, k)) != n) {
            PyErr_SetString(PyExc_ValueError, "life cycle: trace columns of unequal length");
            return -1;
        }
    }
    PyObject *names = PyTuple_GET_ITEM(cols, T_NAMES);
    if (PyList_GET_SIZE(names) != 0 && PyList_GET_SIZE(names) != n) {
        PyErr_SetString(PyExc_ValueError, "life cycle: trace names of another length");
        return -1;
    }
    long long cursor, first;
    PyObject *now_o = st_get(L, A_NOW);
    if (now_o == NULL || st_ll(L, A_CURSOR, &cursor) < 0) {
        Py_XDECREF(now_o);
        return -1;
    }
    first = cursor;
    int ok = 1;
    while (ok && cursor >= 0 && cursor < n) {
        double ts;
        if (read_double(PyList_GET_ITEM(submit, cursor), &ts) < 0) {
            ok = 0;
            break;
        }
        if (ts != t) break;
        ok = arrive_one(L, cols, (Py_ssize_t)cursor, now_o, t) == 0;
        cursor += ok;
    }
    Py_DECREF(now_o);
    if (!ok || st_set_ll(L, A_CURSOR, cursor) < 0) return -1;
    return cursor - first;
}
