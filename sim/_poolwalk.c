/* The backfill walk on node pools, compiled (included by sim/_backfill.c, one translation
 * unit): Slurm's backfill map kept per node-pool segment, and the walk over the queue that
 * starts jobs now or reserves their earliest start. The reference is the Python model in
 * tests/sim/pools_model.py (the code this replaced); tests/sim/test_pools_core.py checks the
 * two against each other on random pools, running jobs, queues and QOS limits.
 *
 * A segment is a set of interchangeable nodes (sim/pools.py); a job's pool is the tuple of
 * its partition's segments in node order, and an allocation is a list of (segment, units). */

/* ------------------------------------------------------------------ the per-segment map */

/* Breakpoints ts[0..n) (ascending, ts[0] = now) and row i: the units free per segment on
 * [ts[i], ts[i+1]), s_n of them, at rows + i * s_n. */
typedef struct {
    double *ts;
    long long *rows;
    Py_ssize_t n, cap, s_n;
    double horizon;
} SegMap;

/* A running (or just started) job's expected end and its allocation: units[k] on segs[k]
 * for k in [off, off + len) of the walk's allocation arrays. */
typedef struct { double t; Py_ssize_t off, len; } SegEnd;

/* Flat (segment, units) pairs, growing by doubling. */
typedef struct { Py_ssize_t *seg; long long *u; Py_ssize_t n, cap; } Pairs;

static int pairs_add(Pairs *p, Py_ssize_t s, long long u) {
    if (p->n == p->cap) {
        Py_ssize_t c = p->cap ? p->cap * 2 : 256;
        Py_ssize_t *ns = PyMem_Realloc(p->seg, (size_t)c * sizeof(Py_ssize_t));
        if (ns == NULL) { PyErr_NoMemory(); return -1; }
        p->seg = ns;
        long long *nu = PyMem_Realloc(p->u, (size_t)c * sizeof(long long));
        if (nu == NULL) { PyErr_NoMemory(); return -1; }
        p->u = nu;
        p->cap = c;
    }
    p->seg[p->n] = s;
    p->u[p->n] = u;
    p->n++;
    return 0;
}

static int segmap_room(SegMap *m, Py_ssize_t need) {
    if (need <= m->cap) return 0;
    Py_ssize_t c = m->cap ? m->cap : 64;
    while (c < need) c *= 2;
    double *ts = PyMem_Realloc(m->ts, (size_t)c * sizeof(double));
    if (ts == NULL) { PyErr_NoMemory(); return -1; }
    m->ts = ts;
    long long *rows = PyMem_Realloc(m->rows, (size_t)(c * m->s_n) * sizeof(long long));
    if (rows == NULL) { PyErr_NoMemory(); return -1; }
    m->rows = rows;
    m->cap = c;
    return 0;
}

static inline long long *segmap_row(const SegMap *m, Py_ssize_t i) { return m->rows + i * m->s_n; }

/* A new last row at t (or, at or before the last breakpoint, the last row itself) that frees
 * the allocations of ends[a..b) on top of the last row. */
static int segmap_release(SegMap *m, double t, const SegEnd *ends, Py_ssize_t a, Py_ssize_t b,
                          const Pairs *al) {
    long long *row;
    if (t <= m->ts[m->n - 1]) {
        row = segmap_row(m, m->n - 1);
    } else {
        if (segmap_room(m, m->n + 1) < 0) return -1;
        row = segmap_row(m, m->n);
        memcpy(row, segmap_row(m, m->n - 1), (size_t)m->s_n * sizeof(long long));
        m->ts[m->n++] = t;
    }
    for (Py_ssize_t k = a; k < b; k++)
        for (Py_ssize_t q = ends[k].off; q < ends[k].off + ends[k].len; q++) row[al->seg[q]] += al->u[q];
    return 0;
}

/* Build the map from `free` units per segment now and the ends (sorted by t), freed in
 * Slurm's will-run groups as map_build does for one pool. */
static int segmap_build(SegMap *m, const Params *p, const long long *free, const SegEnd *ends,
                        Py_ssize_t n_ends, const Pairs *al) {
    if (segmap_room(m, 1) < 0) return -1;
    m->n = 1;
    m->ts[0] = p->now;
    memcpy(m->rows, free, (size_t)m->s_n * sizeof(long long));
    m->horizon = p->horizon;
    double floor_t = p->now + p->min_step;
    if (p->window <= 0 || n_ends == 0) {
        for (Py_ssize_t k = 0; k < n_ends && ends[k].t < p->horizon; k++)
            if (segmap_release(m, ends[k].t < floor_t ? floor_t : ends[k].t, ends, k, k + 1, al) < 0)
                return -1;
        return 0;
    }
    double window = p->window;
    double delta = fmod(ends[0].t + p->epoch, window);
    if (delta < 0) delta += window;
    double barrier = ends[0].t + window - delta;
    Py_ssize_t i = 0;
    while (i < n_ends) {
        Py_ssize_t a = i;
        do i++; while (i < n_ends && ends[i].t <= barrier + window);
        double t = ends[i - 1].t;
        if (t >= p->horizon) break;
        if (segmap_release(m, t < floor_t ? floor_t : t, ends, a, i, al) < 0) return -1;
        while (i < n_ends && ends[i].t > barrier + window)
            window = p->linear > 0 ? window + p->linear : window * 2;
    }
    return 0;
}

/* Earliest start with `units` free over segs[0..k) for `dur`, on the same segments all
 * along; caps[0..k): the units free per segment over it. 0 when none exists in the map. */
static int segmap_fit(const SegMap *m, const Py_ssize_t *segs, Py_ssize_t k, long long units,
                      double dur, double *start, long long *caps) {
    for (Py_ssize_t i = 0; i < m->n; i++) {
        const long long *row = segmap_row(m, i);
        long long sum = 0;
        for (Py_ssize_t q = 0; q < k; q++) sum += caps[q] = row[segs[q]];
        if (sum < units) continue;
        double end = m->ts[i] + dur;
        Py_ssize_t j = i + 1;
        for (; j < m->n && m->ts[j] < end; j++) {
            const long long *rj = segmap_row(m, j);
            sum = 0;
            for (Py_ssize_t q = 0; q < k; q++) {
                if (rj[segs[q]] < caps[q]) caps[q] = rj[segs[q]];
                sum += caps[q];
            }
            if (sum < units) break;
        }
        if (j == m->n || m->ts[j] >= end) {
            *start = m->ts[i];
            return 1;
        }
    }
    return 0;
}

/* The index of breakpoint t, inserted (a copy of the row before it) when missing. */
static Py_ssize_t segmap_cut(SegMap *m, double t) {
    Py_ssize_t i = bisect_left_d(m->ts, 0, m->n, t);
    if (i < m->n && m->ts[i] == t) return i;
    if (segmap_room(m, m->n + 1) < 0) return -1;
    memmove(m->ts + i + 1, m->ts + i, (size_t)(m->n - i) * sizeof(double));
    memmove(segmap_row(m, i + 1), segmap_row(m, i), (size_t)((m->n - i) * m->s_n) * sizeof(long long));
    memcpy(segmap_row(m, i), segmap_row(m, i > 0 ? i - 1 : m->n), (size_t)m->s_n * sizeof(long long));
    m->ts[i] = t;
    m->n++;
    return i;
}

/* Take units[q] of segment seg[q] (q in [off, off + len)) over [start, start + dur), cut at
 * the horizon. */
static int segmap_reserve(SegMap *m, double start, double dur, const Pairs *al, Py_ssize_t off,
                          Py_ssize_t len) {
    double end = start + dur;
    if (end > m->horizon) end = m->horizon;
    if (end <= start) return 0;
    Py_ssize_t i = segmap_cut(m, start);
    if (i < 0) return -1;
    Py_ssize_t k = segmap_cut(m, end);
    if (k < 0) return -1;
    for (Py_ssize_t r = i; r < k; r++) {
        long long *row = segmap_row(m, r);
        for (Py_ssize_t q = off; q < off + len; q++) row[al->seg[q]] -= al->u[q];
    }
    return 0;
}

/* Append to `al` `units` over segs[0..k) with at most caps[q] each, lowest segment first;
 * what the caps cannot hold (a reservation rounded up to whole nodes) goes on segs[0]. */
static int spread_units(Pairs *al, const Py_ssize_t *segs, Py_ssize_t k, const long long *caps,
                        long long units) {
    for (Py_ssize_t q = 0; q < k && units > 0; q++) {
        long long got = caps[q] < units ? caps[q] : units;
        if (got > 0) {
            if (pairs_add(al, segs[q], got) < 0) return -1;
            units -= got;
        }
    }
    return units > 0 ? pairs_add(al, segs[0], units) : 0;
}

/* ------------------------------------------------------------------ the walk */

/* A list of ints as Py_ssize_t (segments: each in [0, s_n)). */
static int read_segs(PyObject *seq, Py_ssize_t s_n, Pairs *out, const char *what) {
    PyObject *f = PySequence_Fast(seq, what);
    if (f == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    for (Py_ssize_t q = 0; q < n; q++) {
        Py_ssize_t s = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(f, q));
        if (s == -1 && PyErr_Occurred()) goto fail;
        if (s < 0 || s >= s_n) {
            PyErr_Format(PyExc_IndexError, "%s: segment %zd out of range", what, s);
            goto fail;
        }
        if (pairs_add(out, s, 0) < 0) goto fail;
    }
    Py_DECREF(f);
    return 0;
fail:
    Py_DECREF(f);
    return -1;
}

/* An allocation [(segment, units), ...] appended to al. */
static int read_alloc(PyObject *alloc, Py_ssize_t s_n, Pairs *al) {
    PyObject *f = PySequence_Fast(alloc, "alloc: expected a list of (segment, units)");
    if (f == NULL) return -1;
    for (Py_ssize_t q = 0; q < PySequence_Fast_GET_SIZE(f); q++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(f, q);
        Py_ssize_t s;
        long long u;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "alloc: expected (segment, units) tuples");
            goto fail;
        }
        s = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
        if ((s == -1 && PyErr_Occurred()) || read_ll(PyTuple_GET_ITEM(pair, 1), &u) < 0) goto fail;
        if (s < 0 || s >= s_n) {
            PyErr_Format(PyExc_IndexError, "alloc: segment %zd out of range", s);
            goto fail;
        }
        if (pairs_add(al, s, u) < 0) goto fail;
    }
    Py_DECREF(f);
    return 0;
fail:
    Py_DECREF(f);
    return -1;
}

static PyObject *alloc_list(const Pairs *al, Py_ssize_t off, Py_ssize_t len) {
    PyObject *out = PyList_New(len);
    if (out == NULL) return NULL;
    for (Py_ssize_t q = 0; q < len; q++) {
        PyObject *pair = Py_BuildValue("(nL)", al->seg[off + q], al->u[off + q]);
        if (pair == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, q, pair);
    }
    return out;
}

/* Insert `e` into ends[0..*n) after any equal end (room for one more is the caller's). */
static void ends_insert_seg(SegEnd *ends, Py_ssize_t *n, SegEnd e) {
    Py_ssize_t lo = 0, hi = *n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) >> 1;
        if (ends[mid].t <= e.t) lo = mid + 1; else hi = mid;
    }
    memmove(ends + lo + 1, ends + lo, (size_t)(*n - lo) * sizeof(SegEnd));
    ends[lo] = e;
    (*n)++;
}

typedef struct { double t, dur; Py_ssize_t off, len; } SegHeld;

static SegMap segmap = {0};
static PyObject *pool_key = NULL, *start_key = NULL, *alloc_key = NULL;

static int cmp_seg_ends(const void *a, const void *b) {
    double x = ((const SegEnd *)a)->t, y = ((const SegEnd *)b)->t;
    return (x > y) - (x < y);
}

/* The running jobs (a dict's values) as ends sorted by time: start + limit rounded up to
 * `res`, with their allocations appended to al. Jobs ending at the same time free their
 * units at once whatever their order, so ties need no key. */
static int running_ends(PyObject *running, double res, Py_ssize_t s_n, SegEnd *ends, Pairs *al) {
    PyObject *key, *job;
    Py_ssize_t pos = 0, k = 0;
    while (PyDict_Next(running, &pos, &key, &job)) {
        double start, limit;
        if (check_job(job) < 0 || read_double(slot(job, F_LIMIT), &limit) < 0) return -1;
        PyObject *v = PyObject_GetAttr(job, start_key);
        if (v == NULL) return -1;
        int r = read_double(v, &start);
        Py_DECREF(v);
        if (r < 0) return -1;
        ends[k].t = round_end(start + limit, res);
        ends[k].off = al->n;
        PyObject *alloc = PyObject_GetAttr(job, alloc_key);
        if (alloc == NULL) return -1;
        r = alloc == Py_None ? 0 : read_alloc(alloc, s_n, al);
        Py_DECREF(alloc);
        if (r < 0) return -1;
        ends[k].len = al->n - ends[k].off;
        k++;
    }
    qsort(ends, (size_t)k, sizeof(SegEnd), cmp_seg_ends);
    return 0;
}

/* Read order[i]'s units, limit and pool (its segments into `pools`, from poff[i], plen[i]
 * of them) for walk_pools(), which reads each job once, where it first needs it. */
static int read_pool_job(PyObject *order, Py_ssize_t i, Py_ssize_t s_n, Pairs *pools,
                         long long *units, double *limit, Py_ssize_t *poff, Py_ssize_t *plen) {
    PyObject *job = PyList_GET_ITEM(order, i);
    if (check_job(job) < 0 || read_ll(slot(job, F_UNITS), &units[i]) < 0 ||
        read_double(slot(job, F_LIMIT), &limit[i]) < 0)
        return -1;
    PyObject *pool = PyObject_GetAttr(job, pool_key);
    if (pool == NULL) return -1;
    poff[i] = pools->n;
    int r = read_segs(pool, s_n, pools, "job.pool");
    Py_DECREF(pool);
    if (r < 0) return -1;
    plen[i] = pools->n - poff[i];
    if (plen[i] == 0) {
        PyErr_SetString(PyExc_ValueError, "walk_pools: a job with an empty pool");
        return -1;
    }
    return 0;
}

/* walk_pools(order, stop, start_now, seg_free, seg_size, running, params, user_use, limits,
 *            n_test) -> list[(int, alloc)] | float | None
 * The backfill walk on node pools over order[:stop] (sim/backfill.py, _walk_pools). With
 * start_now: the jobs it starts now, as (index, allocation); a job a QOS limit holds at its
 * turn (counting the starts before it; `limits` as limit_filter takes them, or None) is
 * passed, and the walk ends at its n_test-th job that counts: one the limits pass over
 * before the will-run test (HOLD_PASSED) does not, as in walk_limited().
 * Else squeue --start of order[stop]: every job before it reserves its earliest start, then
 * its own earliest start, or None.
 * seg_free, seg_size: units free now and in all per segment; running: the running jobs (a
 * dict's values; they end at start + limit, rounded up to the resolution); params: (now, horizon, min_step, window, linear,
 * epoch, resolution, per_node) as in MapParams. A job started now frees its units at its
 * end rounded up to the resolution, and the map is rebuilt with it; a reservation holds
 * whole nodes, at most its partition's units. */
static PyObject *walk_pools(PyObject *self, PyObject *args) {
    PyObject *order, *seg_free, *seg_size, *running, *user_use, *lim, *result = NULL,
             *extra = NULL;
    Py_ssize_t stop, n_test, tested = 0;
    int start_now;
    Params p = {0};
    Limits l;
    if (!PyArg_ParseTuple(args, "O!npO!O!O!(dddddddL)OOn", &PyList_Type, &order, &stop,
                          &start_now, &PyList_Type, &seg_free, &PyList_Type, &seg_size,
                          &PyDict_Type, &running, &p.now, &p.horizon, &p.min_step, &p.window,
                          &p.linear, &p.epoch, &p.res, &p.per_node, &user_use, &lim, &n_test))
        return NULL;
    int limited = lim != Py_None;
    if (limited && (!PyDict_Check(user_use) || parse_limits(lim, &l) < 0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "walk_pools: user_use must be a dict");
        return NULL;
    }
    if ((pool_key == NULL && (pool_key = PyUnicode_InternFromString("pool")) == NULL) ||
        (start_key == NULL && (start_key = PyUnicode_InternFromString("start")) == NULL) ||
        (alloc_key == NULL && (alloc_key = PyUnicode_InternFromString("alloc")) == NULL))
        return NULL;
    Py_ssize_t s_n = PyList_GET_SIZE(seg_free), n_order = PyList_GET_SIZE(order);
    if (s_n == 0 || PyList_GET_SIZE(seg_size) != s_n) {
        PyErr_SetString(PyExc_ValueError, "walk_pools: seg_free and seg_size differ or are empty");
        return NULL;
    }
    if (stop < 0 || stop > n_order || (!start_now && stop == n_order)) {
        PyErr_SetString(PyExc_IndexError, "walk_pools: stop out of range");
        return NULL;
    }
    Py_ssize_t n_jobs = start_now ? stop : stop + 1, n_ends = PyDict_GET_SIZE(running);
    Pairs pools = {0}, al = {0};
    long long *free = PyMem_Calloc((size_t)s_n, sizeof(long long));
    long long *size = PyMem_Calloc((size_t)s_n, sizeof(long long));
    long long *caps = PyMem_Calloc((size_t)s_n + 1, sizeof(long long));
    long long *units = PyMem_Calloc((size_t)n_jobs + 1, sizeof(long long));
    double *limit = PyMem_Calloc((size_t)n_jobs + 1, sizeof(double));
    Py_ssize_t *poff = PyMem_Calloc((size_t)n_jobs + 1, sizeof(Py_ssize_t));
    Py_ssize_t *plen = PyMem_Calloc((size_t)n_jobs + 1, sizeof(Py_ssize_t));
    SegEnd *ends = PyMem_Calloc((size_t)(n_ends + n_jobs + 1), sizeof(SegEnd));
    SegHeld *held = PyMem_Calloc((size_t)n_jobs + 1, sizeof(SegHeld));
    Py_ssize_t n_held = 0;
    if (!free || !size || !caps || !units || !limit || !poff || !plen || !ends || !held) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < s_n; s++)
        if (read_ll(PyList_GET_ITEM(seg_free, s), &free[s]) < 0 ||
            read_ll(PyList_GET_ITEM(seg_size, s), &size[s]) < 0)
            goto done;
    if (running_ends(running, p.res, s_n, ends, &al) < 0) goto done;
    segmap.s_n = s_n;
    segmap.n = segmap.cap = 0; /* its rows' width may differ from the last call's */
    result = start_now ? PyList_New(0) : NULL;
    if (start_now && result == NULL) goto done;
    Py_ssize_t last = n_jobs - 1;
    if (start_now) { /* past the last job that fits now, nothing can start */
        last = -1;
        long long all_free = 0;
        for (Py_ssize_t s = 0; s < s_n; s++) all_free += free[s];
        /* from the end (under limits the walk may go deep into the queue): a job's pool is
         * read only where its units fit in all that is free; the rest at their turn */
        for (Py_ssize_t i = n_jobs - 1; i >= 0 && last < 0; i--) {
            PyObject *job = PyList_GET_ITEM(order, i);
            if (check_job(job) < 0 || read_ll(slot(job, F_UNITS), &units[i]) < 0) goto fail;
            if (units[i] > all_free) continue;
            if (read_pool_job(order, i, s_n, &pools, units, limit, poff, plen) < 0) goto fail;
            long long sum = 0;
            for (Py_ssize_t q = poff[i]; q < poff[i] + plen[i]; q++) sum += free[pools.seg[q]];
            if (sum >= units[i]) last = i;
        }
        if (last < 0) goto done;
        if (limited && (extra = PyDict_New()) == NULL) goto fail;
    }
    if (segmap_build(&segmap, &p, free, ends, n_ends, &al) < 0) goto fail;
    for (Py_ssize_t i = 0; i <= last && tested < n_test; i++) {
        PyObject *job = PyList_GET_ITEM(order, i);
        long long nodes = 0, cpus = 0;
        int h = extra == NULL ? 0 : limit_holds(job, user_use, extra, &l, &nodes, &cpus);
        if (h < 0) goto fail;
        if (h == HOLD_PASSED) continue;
        if (start_now) tested++;
        if (h) continue;
        if (plen[i] == 0 && read_pool_job(order, i, s_n, &pools, units, limit, poff, plen) < 0)
            goto fail;
        const Py_ssize_t *segs = pools.seg + poff[i];
        Py_ssize_t k = plen[i];
        double t;
        int found = segmap_fit(&segmap, segs, k, units[i], limit[i], &t, caps);
        if (!start_now && i == stop) {
            if (found) result = PyFloat_FromDouble(t);
            else result = Py_NewRef(Py_None);
            goto done;
        }
        if (!found) continue;
        if (start_now && t == p.now) {
            Py_ssize_t off = al.n;
            if (spread_units(&al, segs, k, caps, units[i]) < 0) goto fail;
            PyObject *a = alloc_list(&al, off, al.n - off);
            PyObject *pick = a == NULL ? NULL : Py_BuildValue("(nN)", i, a);
            if (pick == NULL || PyList_Append(result, pick) < 0) {
                Py_XDECREF(pick);
                goto fail;
            }
            Py_DECREF(pick);
            SegEnd e = {round_end(p.now + limit[i], p.res), off, al.n - off};
            ends_insert_seg(ends, &n_ends, e);
            if (extra != NULL && count_start(extra, job, nodes, cpus) < 0) goto fail;
            for (Py_ssize_t q = off; q < al.n; q++) free[al.seg[q]] -= al.u[q];
            if (segmap_build(&segmap, &p, free, ends, n_ends, &al) < 0) goto fail;
            for (Py_ssize_t h = 0; h < n_held; h++)
                if (segmap_reserve(&segmap, held[h].t, held[h].dur, &al, held[h].off, held[h].len) < 0)
                    goto fail;
        } else {
            /* a reservation holds whole nodes on a CPU-counted cluster, at most the
             * partition's units (it may take more than is free) */
            long long part = 0;
            for (Py_ssize_t q = 0; q < k; q++) part += size[segs[q]];
            long long want = p.per_node > 1 ? (units[i] + p.per_node - 1) / p.per_node * p.per_node
                                            : units[i];
            if (want > part) want = part;
            Py_ssize_t off = al.n;
            if (spread_units(&al, segs, k, caps, want) < 0) goto fail;
            held[n_held] = (SegHeld){t, limit[i], off, al.n - off};
            if (segmap_reserve(&segmap, t, limit[i], &al, off, al.n - off) < 0) goto fail;
            n_held++;
        }
    }
    if (!start_now) result = Py_NewRef(Py_None);
    goto done;
fail:
    Py_CLEAR(result);
done:
    Py_XDECREF(extra);
    PyMem_Free(pools.seg);
    PyMem_Free(pools.u);
    PyMem_Free(al.seg);
    PyMem_Free(al.u);
    PyMem_Free(free);
    PyMem_Free(size);
    PyMem_Free(caps);
    PyMem_Free(units);
    PyMem_Free(limit);
    PyMem_Free(poff);
    PyMem_Free(plen);
    PyMem_Free(ends);
    PyMem_Free(held);
    return result;
}
