/* The simulator's hot loops, compiled: the backfill map (Slurm's node_space) with the
 * backfill pass over it, the priority refresh (fair-share and sort) at each
 * PriorityCalcPeriod tick and runs of ticks at which nothing else is due, the QOS limit
 * filter of the backfill walk, the arrays of a queue snapshot, and the per-job life cycle of
 * the common replay case (sim/_lifecycle.c, included below) and the backfill walk on node
 * pools (sim/_poolwalk.c).
 *
 * Jobs are sim.state.SimJob objects (a __slots__ class). register() looks up the slot
 * offsets once, so a field read is a pointer load, not an attribute lookup. Every
 * function checks that each job it is given is exactly that class.
 *
 * The rules are documented in sim/backfill.py (_backfill_pass), sim/estimates.py
 * (estimate_start), sim/job_scheduler.py (_refresh_priorities) and sim/acct_policy.py
 * (_limit_reason); tests/sim/test_backfill_core.py checks this module against a plain
 * Python model of each on random inputs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ job slots */

enum { F_UNITS, F_LIMIT, F_STATIC, F_ACCRUE, F_USER, F_TIER, F_SEQ, F_PRIO, F_KEY, N_FIELDS };
static const char *FIELD_NAMES[N_FIELDS] = {
    "units", "limit", "static", "accrue", "user", "tier", "seq", "prio", "key",
};
static Py_ssize_t offsets[N_FIELDS];
static PyTypeObject *job_type = NULL;

/* The fields a queue snapshot reads (queue_arrays); "start" is unset on pending jobs. */
enum { S_ID, S_UNITS, S_LIMIT, S_SUBMIT, S_ELIGIBLE, S_START, N_SNAP };
static const char *SNAP_NAMES[N_SNAP] = {"id", "units", "limit", "submit", "eligible", "start"};
static Py_ssize_t snap_offsets[N_SNAP];

static int slot_offset(PyObject *cls, const char *name, Py_ssize_t *offset) {
    PyObject *d = PyObject_GetAttrString(cls, name);
    if (d == NULL) return -1;
    if (!Py_IS_TYPE(d, &PyMemberDescr_Type) ||
        ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
        Py_DECREF(d);
        PyErr_Format(PyExc_TypeError, "job field %s is not an object __slots__ member", name);
        return -1;
    }
    *offset = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    return 0;
}

static PyObject *register_job_type(PyObject *self, PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "register() takes the job class");
        return NULL;
    }
    for (int f = 0; f < N_FIELDS; f++) {
        PyObject *d = PyObject_GetAttrString(cls, FIELD_NAMES[f]);
        if (d == NULL) return NULL;
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) {
            Py_DECREF(d);
            PyErr_Format(PyExc_TypeError, "job field %s is not a __slots__ member", FIELD_NAMES[f]);
            return NULL;
        }
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type != T_OBJECT_EX) {
            Py_DECREF(d);
            PyErr_Format(PyExc_TypeError, "job field %s has an unexpected slot type", FIELD_NAMES[f]);
            return NULL;
        }
        offsets[f] = m->offset;
        Py_DECREF(d);
    }
    for (int f = 0; f < N_SNAP; f++)
        if (slot_offset(cls, SNAP_NAMES[f], &snap_offsets[f]) < 0) return NULL;
    Py_XDECREF(job_type);
    Py_INCREF(cls);
    job_type = (PyTypeObject *)cls;
    Py_RETURN_NONE;
}

static inline PyObject *slot(PyObject *job, int f) {
    return *(PyObject **)((char *)job + offsets[f]);
}

static inline int check_job(PyObject *job) {
    if (job_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "sim._backfill: register() the job class first");
        return -1;
    }
    if (Py_TYPE(job) != job_type) {
        PyErr_SetString(PyExc_TypeError, "sim._backfill: not a job of the registered class");
        return -1;
    }
    for (int f = 0; f < N_FIELDS; f++) {
        if (slot(job, f) == NULL) {
            PyErr_Format(PyExc_AttributeError, "job field %s is unset", FIELD_NAMES[f]);
            return -1;
        }
    }
    return 0;
}

/* Field reads: a float or an int (the hot loops read several per job; exact floats, the
 * usual case, are read inline). */
static inline int read_double(PyObject *o, double *out) {
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    *out = PyFloat_AsDouble(o);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static inline int read_ll(PyObject *o, long long *out) {
    *out = PyLong_AsLongLong(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* Item k of the index list idx as an index into a list of n jobs; -1 with an error set when
 * it is not an int or is out of range. */
static int read_index(PyObject *idx, Py_ssize_t k, Py_ssize_t n, Py_ssize_t *out) {
    Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(idx, k));
    if (i == -1 && PyErr_Occurred()) return -1;
    if (i < 0 || i >= n) {
        PyErr_SetString(PyExc_IndexError, "idx: a job index out of range");
        return -1;
    }
    *out = i;
    return 0;
}

/* Append index i to the list out (the passes' picks). */
static int append_index(PyObject *out, Py_ssize_t i) {
    PyObject *idx = PyLong_FromSsize_t(i);
    int r = idx == NULL ? -1 : PyList_Append(out, idx);
    Py_XDECREF(idx);
    return r;
}

/* ------------------------------------------------------------------ the backfill map */

typedef struct {
    double *ts;     /* breakpoints, ascending; ts[0] = now */
    long long *fr;  /* units free on [ts[i], ts[i+1]) */
    Py_ssize_t n, cap;
    double horizon;
    /* lower bounds that stay valid while the map lives (reservations only take units) */
    double *first;  /* units -> earliest time with that many units free */
    unsigned *first_gen;
    long long first_n;
    struct keyed { long long units; double dur; double lb; unsigned gen; } *keyed;
    Py_ssize_t keyed_cap;
    unsigned gen;
} Map;

static Map map = {0};

/* Both the map and the list of ends are a pair of parallel arrays (times and unit counts)
 * that grow by doubling and take insertions in the middle. */
static int grow_pair(double **t, long long **u, Py_ssize_t *cap, Py_ssize_t need) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    double *nt = PyMem_Realloc(*t, (size_t)c * sizeof(double));
    if (nt == NULL) { PyErr_NoMemory(); return -1; }
    *t = nt;
    long long *nu = PyMem_Realloc(*u, (size_t)c * sizeof(long long));
    if (nu == NULL) { PyErr_NoMemory(); return -1; }
    *u = nu;
    *cap = c;
    return 0;
}

/* Open a slot at i (of n) and fill it with (t, u). The capacity must allow n + 1. */
static void insert_pair(double *ts, long long *us, Py_ssize_t n, Py_ssize_t i, double t, long long u) {
    memmove(ts + i + 1, ts + i, (size_t)(n - i) * sizeof(double));
    memmove(us + i + 1, us + i, (size_t)(n - i) * sizeof(long long));
    ts[i] = t;
    us[i] = u;
}

static int map_reserve_capacity(Map *m, Py_ssize_t need) {
    return grow_pair(&m->ts, &m->fr, &m->cap, need);
}

/* Running jobs' expected ends as plain arrays, sorted by end. */
typedef struct {
    double *t;
    long long *u;
    Py_ssize_t n, cap;
} Ends;

static Ends ends_buf = {0};

static int ends_reserve(Ends *e, Py_ssize_t need) {
    return grow_pair(&e->t, &e->u, &e->cap, need);
}

/* ends: a list of (end, tie, units) tuples sorted by end. */
static int ends_load(Ends *e, PyObject *ends) {
    Py_ssize_t ne = PyList_GET_SIZE(ends);
    if (ends_reserve(e, ne + 1) < 0) return -1;
    for (Py_ssize_t k = 0; k < ne; k++) {
        PyObject *item = PyList_GET_ITEM(ends, k);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_TypeError, "ends: expected (end, tie, units) tuples");
            return -1;
        }
        if (read_double(PyTuple_GET_ITEM(item, 0), &e->t[k]) < 0) return -1;
        if (read_ll(PyTuple_GET_ITEM(item, 2), &e->u[k]) < 0) return -1;
    }
    e->n = ne;
    return 0;
}

/* Insert (t, u) after any equal end. */
static int ends_insert(Ends *e, double t, long long u) {
    if (ends_reserve(e, e->n + 1) < 0) return -1;
    Py_ssize_t lo = 0, hi = e->n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) >> 1;
        if (e->t[mid] <= t) lo = mid + 1; else hi = mid;
    }
    insert_pair(e->t, e->u, e->n, lo, t, u);
    e->n++;
    return 0;
}

/* How Slurm's backfill sees running jobs free their units (see Params): window > 0 frees
 * them in groups, each at the end of its last job. */
typedef struct {
    double now, horizon, min_step, window, linear, epoch, res, end_shift;
    long long per_node, total;
} Params;

static void map_add_release(Map *m, double t, long long units, double floor_t, long long *cur) {
    if (t < floor_t) t = floor_t;
    *cur += units;
    if (t <= m->ts[m->n - 1]) {
        m->fr[m->n - 1] = *cur;
    } else {
        m->ts[m->n] = t;
        m->fr[m->n] = *cur;
        m->n++;
    }
}

/* Build the map from `free_now` units now and the running jobs' ends. An end already due
 * counts as min_step from now (the job is being cleaned up). With p->window > 0 the ends
 * are grouped as Slurm's will-run test (_will_run_test in cons_common's job_test.c, 22.05)
 * removes running jobs: the first end (Slurm's own: the map's less p->end_shift) rounded up
 * to the next multiple of the window in Unix time (an exact multiple moves a whole window
 * on) is the barrier; a group takes every job ending by barrier + window and frees its
 * units at its last job's end; between groups the window doubles (grows by `linear`,
 * bf_window_linear, when set) until it reaches the next end. */
static int map_build(Map *m, const Params *p, long long free_now, const Ends *e) {
    if (map_reserve_capacity(m, e->n + 1) < 0) return -1;
    m->ts[0] = p->now;
    m->fr[0] = free_now;
    m->n = 1;
    m->horizon = p->horizon;
    long long cur = free_now;
    double floor_t = p->now + p->min_step;
    if (p->window <= 0 || e->n == 0) {
        for (Py_ssize_t k = 0; k < e->n && e->t[k] < p->horizon; k++)
            map_add_release(m, e->t[k], e->u[k], floor_t, &cur);
    } else {
        double window = p->window;
        /* the barrier from Slurm's own (whole-second) end: the map's less end_shift */
        double first = e->t[0] - p->end_shift;
        double delta = fmod(first + p->epoch, window);
        if (delta < 0) delta += window;
        double barrier = first + window - delta + p->end_shift;
        Py_ssize_t i = 0;
        while (i < e->n) {
            long long units = 0;
            do {
                units += e->u[i];
                i++;
            } while (i < e->n && e->t[i] <= barrier + window);
            double t = e->t[i - 1];
            if (t >= p->horizon) break;
            map_add_release(m, t, units, floor_t, &cur);
            while (i < e->n && e->t[i] > barrier + window)
                window = p->linear > 0 ? window + p->linear : window * 2;
        }
    }
    /* fresh caches: bump the generation; (re)size the per-units table */
    long long total = p->total;
    m->gen++;
    if (m->gen == 0) {  /* wrapped: clear the stamps */
        if (m->first_gen) memset(m->first_gen, 0, (size_t)m->first_n * sizeof(unsigned));
        for (Py_ssize_t i = 0; i < m->keyed_cap; i++) m->keyed[i].gen = 0;
        m->gen = 1;
    }
    if (total + 1 > m->first_n) {
        double *first = PyMem_Realloc(m->first, (size_t)(total + 1) * sizeof(double));
        if (first == NULL) { PyErr_NoMemory(); return -1; }
        m->first = first;
        unsigned *fg = PyMem_Realloc(m->first_gen, (size_t)(total + 1) * sizeof(unsigned));
        if (fg == NULL) { PyErr_NoMemory(); return -1; }
        memset(fg + m->first_n, 0, (size_t)(total + 1 - m->first_n) * sizeof(unsigned));
        m->first_gen = fg;
        m->first_n = total + 1;
    }
    if (m->keyed == NULL) {
        m->keyed_cap = 4096;
        m->keyed = PyMem_Calloc((size_t)m->keyed_cap, sizeof(*m->keyed));
        if (m->keyed == NULL) { PyErr_NoMemory(); return -1; }
    }
    return 0;
}

static inline Py_ssize_t bisect_left_d(const double *a, Py_ssize_t lo, Py_ssize_t hi, double x) {
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) >> 1;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static struct keyed *keyed_slot(Map *m, long long units, double dur) {
    unsigned long long h = (unsigned long long)units * 0x9E3779B97F4A7C15ULL;
    unsigned long long bits;
    memcpy(&bits, &dur, sizeof bits);
    h ^= bits + 0x7F4A7C159E3779B9ULL + (h << 6) + (h >> 2);
    Py_ssize_t mask = m->keyed_cap - 1;
    Py_ssize_t i = (Py_ssize_t)(h & (unsigned long long)mask);
    for (Py_ssize_t probe = 0; probe < m->keyed_cap; probe++) {
        struct keyed *s = &m->keyed[(i + probe) & mask];
        if (s->gen != m->gen) {  /* empty in this generation: claim it */
            s->gen = m->gen;
            s->units = units;
            s->dur = dur;
            s->lb = NAN;
            return s;
        }
        if (s->units == units && s->dur == dur) return s;
    }
    return NULL;  /* table full: no caching */
}

/* Earliest start with `units` free for `dur` (cut at the horizon); sets *found = 0 when no
 * start before the horizon exists. */
static double map_earliest(Map *m, long long units, double dur, int *found) {
    const double *ts = m->ts;
    const long long *fr = m->fr;
    Py_ssize_t n = m->n, i;
    struct keyed *ks = keyed_slot(m, units, dur);
    if (ks != NULL && !isnan(ks->lb)) {
        if (isinf(ks->lb)) { *found = 0; return 0.0; }
        i = bisect_left_d(ts, 0, n, ks->lb);
    } else {
        int have_first = units >= 0 && units < m->first_n && m->first_gen[units] == m->gen;
        i = have_first ? bisect_left_d(ts, 0, n, m->first[units]) : 0;
        while (i < n && fr[i] < units) i++;
        if (i < n && units >= 0 && units < m->first_n) {
            m->first[units] = ts[i];
            m->first_gen[units] = m->gen;
        }
    }
    while (i < n) {
        if (fr[i] < units) { i++; continue; }
        double start = ts[i], end = start + dur;
        Py_ssize_t j = i + 1;
        while (j < n && ts[j] < end && fr[j] >= units) j++;
        if (j == n || ts[j] >= end) {
            if (ks != NULL) ks->lb = start;
            *found = 1;
            return start;
        }
        i = j + 1;
    }
    if (ks != NULL) ks->lb = INFINITY;
    *found = 0;
    return 0.0;
}

static int map_insert(Map *m, Py_ssize_t i, double t) {
    if (map_reserve_capacity(m, m->n + 1) < 0) return -1;
    insert_pair(m->ts, m->fr, m->n, i, t, m->fr[i - 1]);
    m->n++;
    return 0;
}

/* Take `units` over [start, start + dur) (cut at the horizon). */
static int map_reserve(Map *m, double start, double dur, long long units) {
    double end = start + dur;
    if (end > m->horizon) end = m->horizon;
    if (end <= start) return 0;
    Py_ssize_t i = bisect_left_d(m->ts, 0, m->n, start);
    if (i == m->n || m->ts[i] != start)
        if (map_insert(m, i, start) < 0) return -1;
    Py_ssize_t k = bisect_left_d(m->ts, i, m->n, end);
    if (k == m->n || m->ts[k] != end)
        if (map_insert(m, k, end) < 0) return -1;
    for (Py_ssize_t q = i; q < k; q++) m->fr[q] -= units;
    return 0;
}

static inline long long whole_nodes(long long units, long long per_node, long long total) {
    if (per_node <= 1) return units;
    long long u = ((units + per_node - 1) / per_node) * per_node;
    return u < total ? u : total;
}

/* A running job's expected end in the map: rounded up to bf_resolution. */
static inline double round_end(double t, double res) {
    if (isinf(t) || res <= 1) return t;
    return ceil(t / res) * res;
}

/* The map's inputs come as one record, sim.mapparams.MapParams: any object with these
 * attributes (read by name once per call; a missing or mistyped one is a clear error). */
enum { P_NOW, P_FREE, P_ENDS, P_HORIZON, P_MIN_STEP, P_PER_NODE, P_TOTAL, P_WINDOW, P_LINEAR,
       P_EPOCH, P_RESOLUTION, P_END_SHIFT, N_PARAMS };
static const char *PARAM_NAMES[N_PARAMS] = {
    "now", "free", "ends", "horizon", "min_step", "per_node", "total", "window", "linear",
    "epoch", "resolution", "end_shift",
};
static PyObject *param_keys[N_PARAMS]; /* interned at import */

static PyObject *param_get(PyObject *rec, int k) { return PyObject_GetAttr(rec, param_keys[k]); }

static int param_double(PyObject *rec, int k, double *out) {
    const char *name = PARAM_NAMES[k];
    PyObject *v = param_get(rec, k);
    if (v == NULL) return -1;
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "map parameter %s must be a number", name);
        return -1;
    }
    return 0;
}

static int param_ll(PyObject *rec, int k, long long *out) {
    const char *name = PARAM_NAMES[k];
    PyObject *v = param_get(rec, k);
    if (v == NULL) return -1;
    PyObject *i = PyNumber_Index(v); /* ints and int-like (numpy) values, not floats */
    Py_DECREF(v);
    *out = i != NULL ? PyLong_AsLongLong(i) : -1;
    Py_XDECREF(i);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "map parameter %s must be an int", name);
        return -1;
    }
    return 0;
}

/* plan() and estimate() take (order, index, params): the queue (a list of jobs), an index,
 * and the map's inputs (see MapParams in sim/mapparams.py for their meaning). */
static int parse_params(PyObject *rec, const char *fname, Params *p, long long *free_now,
                        PyObject **ends) {
    PyObject *e = param_get(rec, P_ENDS);
    if (e == NULL) return -1;
    Py_DECREF(e); /* the record keeps it alive for the call */
    if (!PyList_Check(e)) {
        PyErr_Format(PyExc_TypeError, "%s: map parameter ends must be a list", fname);
        return -1;
    }
    *ends = e;
    if (param_double(rec, P_NOW, &p->now) < 0 || param_ll(rec, P_FREE, free_now) < 0 ||
        param_double(rec, P_HORIZON, &p->horizon) < 0 ||
        param_double(rec, P_MIN_STEP, &p->min_step) < 0 ||
        param_ll(rec, P_PER_NODE, &p->per_node) < 0 || param_ll(rec, P_TOTAL, &p->total) < 0 ||
        param_double(rec, P_WINDOW, &p->window) < 0 ||
        param_double(rec, P_LINEAR, &p->linear) < 0 ||
        param_double(rec, P_EPOCH, &p->epoch) < 0 ||
        param_double(rec, P_RESOLUTION, &p->res) < 0 ||
        param_double(rec, P_END_SHIFT, &p->end_shift) < 0)
        return -1;
    return 0;
}

static int parse_map_call(PyObject *args, const char *fname, PyObject **order, Py_ssize_t *index,
                          Params *p, long long *free_now, PyObject **ends) {
    PyObject *rec;
    if (!PyArg_ParseTuple(args, "O!nO", &PyList_Type, order, index, &rec)) return -1;
    return parse_params(rec, fname, p, free_now, ends);
}

typedef struct { double t, dur; long long units; } Held;

/* The backfill pass over n jobs given as arrays (plan(), plan_limited()): the positions of
 * the jobs it starts now, ascending, into `out` (*n_out of them); `held` has room for n. A
 * job that waits reserves its earliest start (whole nodes); a job started now joins the
 * running jobs, so the map is rebuilt with it (its end can regroup the others) and the
 * reservations so far. */
/* A backfill walk in progress over the map: the units still free now, the reservations so
 * far (in `held`) and whether a start left the map to rebuild. */
typedef struct {
    long long free_left;
    Py_ssize_t n_held;
    int stale;
} Walk;

/* One job's turn in a backfill walk (plan_core(), walk_limited()): the map rebuilt first if
 * a start left it stale (the running jobs' ends, then the reservations so far); then the job
 * starts now, its end joining the running jobs' (1), or reserves its earliest start, whole
 * nodes (0), or finds none (0). -1 with an exception. */
static int walk_turn(Walk *w, const Params *p, Held *held, long long units, double limit) {
    if (w->stale) {
        if (map_build(&map, p, w->free_left, &ends_buf) < 0) return -1;
        for (Py_ssize_t h = 0; h < w->n_held; h++)
            if (map_reserve(&map, held[h].t, held[h].dur, held[h].units) < 0) return -1;
        w->stale = 0;
    }
    int found;
    double t = map_earliest(&map, units, limit, &found);
    if (!found) return 0;
    if (t == p->now) {
        w->free_left -= units;
        double end = round_end(p->now + limit, p->res) + p->end_shift;
        if (ends_insert(&ends_buf, end, units) < 0) return -1;
        w->stale = 1;
        return 1;
    }
    held[w->n_held] = (Held){t, limit, whole_nodes(units, p->per_node, p->total)};
    if (map_reserve(&map, t, limit, held[w->n_held].units) < 0) return -1;
    w->n_held++;
    return 0;
}

static int plan_core(const long long *units, const double *limit, Py_ssize_t n, const Params *p,
                     long long free_now, PyObject *ends, Held *held, Py_ssize_t *out,
                     Py_ssize_t *n_out) {
    *n_out = 0;
    /* A job larger than the free units cannot start in this pass (starts only take units);
     * past the last one that fits, nothing changes. */
    Py_ssize_t last = -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (units[i] <= free_now) last = i;
    if (last < 0) return 0;
    if (ends_load(&ends_buf, ends) < 0) return -1;
    if (map_build(&map, p, free_now, &ends_buf) < 0) return -1;
    Walk w = {free_now, 0, 0};
    for (Py_ssize_t i = 0; i <= last; i++) {
        int started = walk_turn(&w, p, held, units[i], limit[i]);
        if (started < 0) return -1;
        if (started) out[(*n_out)++] = i;
    }
    return 0;
}

/* Positions `pos[0..n)` mapped through `index` (NULL: themselves) as a list of ints. */
static PyObject *index_list(const Py_ssize_t *pos, Py_ssize_t n, const Py_ssize_t *index) {
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *idx = PyLong_FromSsize_t(index ? index[pos[k]] : pos[k]);
        if (idx == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, idx);
    }
    return out;
}

/* plan(order, n_test, params) -> list[int]
 * The backfill pass over the first n_test jobs of order: indices of the jobs it starts now
 * (plan_core). */
static PyObject *plan(PyObject *self, PyObject *args) {
    PyObject *order, *ends, *started = NULL;
    Py_ssize_t n_test, n_out = 0;
    Params p;
    long long free_now;
    if (parse_map_call(args, "plan", &order, &n_test, &p, &free_now, &ends) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(order);
    if (n_test < n) n = n_test;
    if (n <= 0) return PyList_New(0);
    long long *units = PyMem_Malloc((size_t)n * sizeof(long long));
    double *limit = PyMem_Malloc((size_t)n * sizeof(double));
    Held *held = PyMem_Malloc((size_t)n * sizeof(Held));
    Py_ssize_t *pos = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    if (units == NULL || limit == NULL || held == NULL || pos == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *job = PyList_GET_ITEM(order, i);
        if (check_job(job) < 0 || read_ll(slot(job, F_UNITS), &units[i]) < 0 ||
            read_double(slot(job, F_LIMIT), &limit[i]) < 0)
            goto done;
    }
    if (plan_core(units, limit, n, &p, free_now, ends, held, pos, &n_out) < 0) goto done;
    started = index_list(pos, n_out, NULL);
done:
    PyMem_Free(units);
    PyMem_Free(limit);
    PyMem_Free(held);
    PyMem_Free(pos);
    return started;
}

/* estimate(order, target, params) -> float | None
 * squeue --start: every job before `target` reserves its earliest start (whole nodes), then
 * the target's earliest start, or None when none lies within the horizon. */
static PyObject *estimate(PyObject *self, PyObject *args) {
    PyObject *order, *ends;
    Py_ssize_t target;
    Params p;
    long long free_now;
    if (parse_map_call(args, "estimate", &order, &target, &p, &free_now, &ends) < 0) return NULL;
    if (target < 0 || target >= PyList_GET_SIZE(order)) {
        PyErr_SetString(PyExc_IndexError, "target index out of range");
        return NULL;
    }
    if (ends_load(&ends_buf, ends) < 0 || map_build(&map, &p, free_now, &ends_buf) < 0)
        return NULL;
    for (Py_ssize_t i = 0; i <= target; i++) {
        PyObject *job = PyList_GET_ITEM(order, i);
        long long u;
        double lim;
        if (check_job(job) < 0 || read_ll(slot(job, F_UNITS), &u) < 0 ||
            read_double(slot(job, F_LIMIT), &lim) < 0)
            return NULL;
        int found;
        double t = map_earliest(&map, u, lim, &found);
        if (i == target) {
            if (!found) Py_RETURN_NONE;
            return PyFloat_FromDouble(t);
        }
        if (found && map_reserve(&map, t, lim, whole_nodes(u, p.per_node, p.total)) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ priority refresh */

typedef struct {
    long long tier, prio, seq;
    PyObject *job;
} SortItem;

/* A queued job as the priority refresh reads it: its sort item, the fixed parts of its
 * priority and the priority it holds (read once per refresh call, however many ticks). */
typedef struct {
    SortItem it;
    double p0, accrue;
    long long user, old_prio;
} PrioItem;

static int cmp_items(const void *pa, const void *pb) {
    const SortItem *a = pa, *b = pb;  /* key (-tier, -prio, seq), ascending */
    if (a->tier != b->tier) return a->tier > b->tier ? -1 : 1;
    if (a->prio != b->prio) return a->prio > b->prio ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static int set_slot(PyObject *job, int f, PyObject *value) {
    PyObject **p = (PyObject **)((char *)job + offsets[f]);
    PyObject *old = *p;
    *p = value;  /* steals the reference */
    Py_XDECREF(old);
    return 0;
}

/* The fair-share factors as the refresh reads them: per user code, v[user] itself, or
 * (lazy) from the folded usage v: classic 2^(-(v[user] / total) * scale), or with `tree`
 * Fair Tree's rank (fs_tree below); users past n get 1.0. */
typedef struct {
    const double *v;
    Py_ssize_t n;
    int lazy;
    double total, scale;
    int tree;
    Py_ssize_t associations;  /* Fair Tree's divisor: the tree's user associations (0: m) */
} FsView;

/* Fair Tree (Slurm's default fair-share algorithm) on a flat tree of equal shares: users
 * ranked by usage, the least used first; a user's factor is rank / A, where the rank is m
 * less the number of the first m = `scale` users (the log's) with strictly less usage (ties
 * share a rank) and A is the tree's count of user associations, at least m: Slurm divides
 * by all of them, and those outside the ranked users' account (root's own) rank above them
 * while they run nothing. Nobody's usage yet: the whole tree ties, 1.0 for all. */
static struct {
    double *f, *sorted;
    Py_ssize_t cap;
} fs_tree = {0};

static int cmp_doubles(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The users Fair Tree ranks among: the first `scale`, at most the view's. */
static inline Py_ssize_t fs_tree_users(const FsView *fs) {
    Py_ssize_t m = (Py_ssize_t)(fs->scale > 1 ? fs->scale : 1);
    return m > fs->n ? fs->n : m;
}

/* What Fair Tree divides a rank by: the user associations, at least the m users ranked. */
static inline double fs_tree_divisor(const FsView *fs, Py_ssize_t m) {
    return (double)(fs->associations > m ? fs->associations : m);
}

/* One user's Fair Tree factor, counted directly (an arrival between two ticks). */
static double fs_tree_one(const FsView *fs, long long user) {
    if (!(fs->total > 0)) return 1.0;
    Py_ssize_t m = fs_tree_users(fs), less = 0;
    for (Py_ssize_t w = 0; w < m; w++) less += fs->v[w] < fs->v[user];
    return m > 0 ? (double)(m - less) / fs_tree_divisor(fs, m) : 1.0;
}

/* Every user's Fair Tree factor into fs_tree.f, from one sort (a refresh; -1 with an
 * exception set). */
static int fs_tree_fill(const FsView *fs) {
    Py_ssize_t n = fs->n;
    if (n > fs_tree.cap) {
        double *f = PyMem_Realloc(fs_tree.f, (size_t)n * sizeof(double));
        if (f == NULL) { PyErr_NoMemory(); return -1; }
        fs_tree.f = f;
        double *srt = PyMem_Realloc(fs_tree.sorted, (size_t)n * sizeof(double));
        if (srt == NULL) { PyErr_NoMemory(); return -1; }
        fs_tree.sorted = srt;
        fs_tree.cap = n;
    }
    Py_ssize_t m = fs_tree_users(fs);
    double divisor = fs_tree_divisor(fs, m);
    memcpy(fs_tree.sorted, fs->v, (size_t)m * sizeof(double));
    qsort(fs_tree.sorted, (size_t)m, sizeof(double), cmp_doubles);
    for (Py_ssize_t u = 0; u < n; u++) {
        if (!(fs->total > 0) || m == 0) {
            fs_tree.f[u] = 1.0;
            continue;
        }
        Py_ssize_t lo = 0, hi = m;  /* the users of the first m with less usage than u */
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (fs_tree.sorted[mid] < fs->v[u]) lo = mid + 1; else hi = mid;
        }
        fs_tree.f[u] = (double)(m - lo) / divisor;
    }
    return 0;
}

/* The lazy fair-share factors of one refresh, per user: each computed once per refresh (a
 * user's stamp equal to the refresh's generation marks its factor as computed). */
static struct { double *f; unsigned *gen; Py_ssize_t cap; unsigned cur; } fs_memo = {0};

static int fs_memo_start(Py_ssize_t n) {
    if (n > fs_memo.cap) {
        double *f = PyMem_Realloc(fs_memo.f, (size_t)n * sizeof(double));
        if (f == NULL) { PyErr_NoMemory(); return -1; }
        fs_memo.f = f;
        unsigned *g = PyMem_Realloc(fs_memo.gen, (size_t)n * sizeof(unsigned));
        if (g == NULL) { PyErr_NoMemory(); return -1; }
        memset(g + fs_memo.cap, 0, (size_t)(n - fs_memo.cap) * sizeof(unsigned));
        fs_memo.gen = g;
        fs_memo.cap = n;
    }
    if (++fs_memo.cur == 0) {  /* wrapped: forget every stamp */
        memset(fs_memo.gen, 0, (size_t)fs_memo.cap * sizeof(unsigned));
        fs_memo.cur = 1;
    }
    return 0;
}

/* A user's fair-share factor (in range of the view; FsView below). */
static inline double fs_factor(const FsView *fs, long long user) {
    if (!fs->lazy) return fs->v[user];
    if (!(fs->total > 0)) return 1.0;
    if (fs->tree) return fs_tree.f[user];  /* fs_tree_fill() ran for this view */
    if (fs_memo.gen[user] != fs_memo.cur) {
        fs_memo.f[user] = exp2(-(fs->v[user] / fs->total) * fs->scale);
        fs_memo.gen[user] = fs_memo.cur;
    }
    return fs_memo.f[user];
}

/* The jobs of `order` as the refresh reads them (PyMem_Malloc'd; *out NULL when empty); the
 * number of jobs, or -1 with an exception set. */
static Py_ssize_t prio_items(PyObject *order, PrioItem **out) {
    Py_ssize_t n = PyList_GET_SIZE(order);
    *out = NULL;
    if (n == 0) return 0;
    PrioItem *items = PyMem_Malloc((size_t)n * sizeof(PrioItem));
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *job = PyList_GET_ITEM(order, i);
        PrioItem *x = &items[i];
        if (check_job(job) < 0 || read_double(slot(job, F_STATIC), &x->p0) < 0 ||
            read_double(slot(job, F_ACCRUE), &x->accrue) < 0 ||
            read_ll(slot(job, F_USER), &x->user) < 0 ||
            read_ll(slot(job, F_TIER), &x->it.tier) < 0 ||
            read_ll(slot(job, F_SEQ), &x->it.seq) < 0 ||
            read_ll(slot(job, F_PRIO), &x->old_prio) < 0) {
            PyMem_Free(items);
            return -1;
        }
        x->it.job = job;
        x->it.prio = x->old_prio;
    }
    *out = items;
    return n;
}

/* Every item's priority as of `tick` (the rules: refresh() below); 1 if the items are no
 * longer in the queue's order, 0 if they are, -1 with an exception set. */
static int prio_tick(PrioItem *items, Py_ssize_t n, double tick, double w_age, double max_age,
                     int whole_age, double w_fs, const FsView *fs) {
    if (w_fs != 0.0 && fs->lazy && fs_memo_start(fs->n) < 0) return -1;
    if (w_fs != 0.0 && fs->lazy && fs->tree && fs->total > 0 && fs_tree_fill(fs) < 0) return -1;
    int unordered = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PrioItem *x = &items[i];
        double p = x->p0;
        if (w_age != 0.0) {
            double age = tick - x->accrue;
            if (whole_age) age = nearbyint(age);
            if (age > 0) p += w_age * (age < max_age ? age / max_age : 1.0);
        }
        if (w_fs != 0.0)
            p += w_fs * (x->user >= 0 && x->user < fs->n ? fs_factor(fs, x->user) : 1.0);
        long long prio = (long long)p;
        x->it.prio = prio < 1 ? 1 : prio;
        if (i > 0 && !unordered && cmp_items(&items[i - 1].it, &x->it) >= 0) unordered = 1;
    }
    return unordered;
}

static int cmp_prio_items(const void *pa, const void *pb) {
    return cmp_items(&((const PrioItem *)pa)->it, &((const PrioItem *)pb)->it);
}

/* The priorities computed into the jobs (job.prio; job.key = None where it changed) and,
 * if `sort`, `order` sorted by them; 1 if the order changed, 0 if not, -1 on error. */
static int prio_finish(PyObject *order, PrioItem *items, Py_ssize_t n, int sort) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PrioItem *x = &items[i];
        if (x->it.prio == x->old_prio) continue;
        PyObject *po = PyLong_FromLongLong(x->it.prio);
        if (po == NULL) return -1;
        set_slot(x->it.job, F_PRIO, po);
        Py_INCREF(Py_None);
        set_slot(x->it.job, F_KEY, Py_None);
        x->old_prio = x->it.prio;
    }
    if (!sort) return 0;
    int changed = 0;
    qsort(items, (size_t)n, sizeof(PrioItem), cmp_prio_items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *job = items[i].it.job;
        PyObject **slotp = &((PyListObject *)order)->ob_item[i];
        if (*slotp != job) {
            changed = 1;
            *slotp = job; /* a permutation: the list keeps one reference per job */
        }
    }
    return changed;
}

/* Recompute every job's priority in `order` as of `tick` and sort it (the rules: refresh()
 * below); 1 if the order changed, 0 if not, -1 with an exception set. */
static int refresh_order(PyObject *order, double tick, double w_age, double max_age,
                         int whole_age, double w_fs, const FsView *fs) {
    PrioItem *items;
    Py_ssize_t n = prio_items(order, &items);
    if (n <= 0) return (int)n;
    int unordered = prio_tick(items, n, tick, w_age, max_age, whole_age, w_fs, fs);
    int changed = unordered < 0 ? -1 : prio_finish(order, items, n, unordered);
    PyMem_Free(items);
    return changed;
}

/* A float64 1-d buffer of `fs` into `fsv` (None: an empty view). */
static int fs_view(PyObject *fs, Py_buffer *view, FsView *fsv) {
    fsv->v = NULL;
    fsv->n = 0;
    if (fs == Py_None) return 0;
    if (PyObject_GetBuffer(fs, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->format == NULL || strcmp(view->format, "d") != 0 || view->ndim != 1) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "fs: expected a 1-d float64 array");
        return -1;
    }
    fsv->v = view->buf;
    fsv->n = view->shape[0];
    return 0;
}

/* refresh(order, tick, w_age, max_age, w_fs, fs[, whole_age]) -> bool
 * Recompute every job's priority as of `tick` (Slurm truncates the weighted sum to an
 * integer, at least 1; with `whole_age` a job's age, tick - accrue, is rounded to whole
 * seconds: sim.priority.PriorityModel.accrue_time stores it so), set job.prio, sort `order`
 * in place by (-tier, -prio, seq); True if the order changed. A job whose priority changed gets job.key = None (SimJob.sort_key
 * computes it then). fs: the fair-share factor per user code, as a float64 buffer (a NumPy
 * array) or as (usage, total, scale[, tree, associations]), the folded usage from which each
 * queued job's factor is computed here, 2^(-(usage / total) * scale) or with `tree` Fair
 * Tree's rank (sim.priority.FairShare: only the queued users' factors are needed), or None;
 * users past its end get 1.0. */
static PyObject *refresh(PyObject *self, PyObject *args) {
    PyObject *order, *fs;
    double tick, w_age, max_age, w_fs;
    int whole_age = 0;
    if (!PyArg_ParseTuple(args, "O!ddddO|p", &PyList_Type, &order, &tick, &w_age, &max_age,
                          &w_fs, &fs, &whole_age))
        return NULL;
    FsView fsv = {NULL, 0, 0, 0.0, 1.0, 0, 0};
    if (PyTuple_Check(fs)) {
        if (!PyArg_ParseTuple(fs, "Odd|pn;fs: expected (usage, total, scale[, tree, associations])",
                              &fs, &fsv.total, &fsv.scale, &fsv.tree, &fsv.associations))
            return NULL;
        fsv.lazy = 1;
    }
    Py_buffer view = {0};
    if (fs_view(fs, &view, &fsv) < 0) return NULL;
    int changed = refresh_order(order, tick, w_age, max_age, whole_age, w_fs, &fsv);
    if (fsv.v) PyBuffer_Release(&view);
    if (changed < 0) return NULL;
    return PyBool_FromLong(changed);
}

/* A job's place in the queue's order: its (tier, prio, seq) (SimJob.sort_key). */
static int sort_item(PyObject *job, SortItem *it) {
    if (check_job(job) < 0 || read_ll(slot(job, F_TIER), &it->tier) < 0 ||
        read_ll(slot(job, F_PRIO), &it->prio) < 0 || read_ll(slot(job, F_SEQ), &it->seq) < 0)
        return -1;
    it->job = job;
    return 0;
}

/* Insert `job` into `order` after any job with an equal key (insort() below). */
static int insort_job(PyObject *order, PyObject *job) {
    SortItem x, m;
    if (sort_item(job, &x) < 0) return -1;
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(order);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) >> 1;
        if (sort_item(PyList_GET_ITEM(order, mid), &m) < 0) return -1;
        if (cmp_items(&x, &m) < 0) hi = mid; else lo = mid + 1;
    }
    return PyList_Insert(order, lo, job);
}

/* insort(order, job) -> None
 * Insert `job` into `order`, a queue sorted by (-tier, -prio, seq), after any job with an
 * equal key: bisect.insort(order, job, key=SimJob.sort_key), with the key read from the
 * job's fields (SimJob.key, when set, equals them). */
static PyObject *insort(PyObject *self, PyObject *args) {
    PyObject *order, *job;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &order, &job)) return NULL;
    if (insort_job(order, job) < 0) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ QOS limits */

/* A running-jobs limit's count for one user: use[k] of the user's entry in `user_use`
 * (a dict user -> [jobs, nodes, cpus, submitted]); 0 without one. */
static int use_count(PyObject *use, int k, long long *out) {
    *out = 0;
    if (use == NULL) return 0;
    if (!PyList_Check(use) || PyList_GET_SIZE(use) < 3) {
        PyErr_SetString(PyExc_TypeError, "user_use: expected lists [jobs, nodes, cpus, ...]");
        return -1;
    }
    return read_ll(PyList_GET_ITEM(use, k), out);
}

typedef struct {
    long long max_jobs, max_nodes, max_cpus, per_node, node_cpus;
    int exempt, cpu_counted;
    /* a dict user -> (max_jobs, max_nodes, max_cpus), the limits of users who have their own
     * (borrowed); NULL: none */
    PyObject *user_limits;
} Limits;

static int parse_limits(PyObject *t, Limits *l) {
    PyObject *users;
    if (!PyArg_ParseTuple(t, "LLLppLLO!;limits: expected (max_jobs, max_nodes, max_cpus, "
                             "larger_jobs_exempt, cpu_counted, cpus_per_node, node_cpus, "
                             "user_limits: dict)",
                          &l->max_jobs, &l->max_nodes, &l->max_cpus, &l->exempt, &l->cpu_counted,
                          &l->per_node, &l->node_cpus, &PyDict_Type, &users))
        return -1;
    if (l->per_node < 1 || l->node_cpus < 1) {
        PyErr_SetString(PyExc_ValueError, "limits: cpus_per_node and node_cpus must be >= 1");
        return -1;
    }
    l->user_limits = PyDict_GET_SIZE(users) ? users : NULL;
    return 0;
}

/* The limits `user` is held to (caps[0..2]: jobs, nodes, CPUs; -1: none): their own where
 * `l` lists them, else the QOS's. 0, or -1 with an exception. */
static int user_caps(const Limits *l, PyObject *user, long long *caps) {
    caps[0] = l->max_jobs, caps[1] = l->max_nodes, caps[2] = l->max_cpus;
    if (l->user_limits == NULL) return 0;
    PyObject *own = PyDict_GetItemWithError(l->user_limits, user);
    if (own == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyArg_ParseTuple(own, "LLL;user_limits: expected (max_jobs, max_nodes, max_cpus)", &caps[0],
                          &caps[1], &caps[2]))
        return -1;
    return 0;
}

/* Add the user's counts in `counts` (a dict user -> [jobs, nodes, cpus, ...]; none without
 * an entry) to c[k] for each k that `want[k]`. */
static int add_use(PyObject *counts, PyObject *user, const int *want, long long *c) {
    PyObject *use = PyDict_GetItemWithError(counts, user);
    if (use == NULL) return PyErr_Occurred() ? -1 : 0;
    for (int k = 0; k < 3; k++) {
        long long v;
        if (!want[k]) continue;
        if (use_count(use, k, &v) < 0) return -1;
        c[k] += v;
    }
    return 0;
}

/* How a QOS limit holds a job back, as Slurm 22.05's backfill meets it (_attempt_backfill):
 * the running-jobs limit (acct_policy_job_runnable_pre_select) and a job over the per-user
 * node cap on its own (get_node_cnts) are passed over before the job counts towards
 * bf_max_job_test; the node and CPU counts with the user's running jobs are checked after the
 * will-run test (acct_policy_job_runnable_post_select), so the job counts. */
enum { HOLD_PASSED = 1, HOLD_TESTED = 2 };

/* Whether a QOS limit holds `job` back (HOLD_PASSED or HOLD_TESTED) or not (0), -1 with an
 * exception: its user's running jobs, nodes and CPUs in `user_use`, plus those in `extra`
 * (jobs started earlier in the same pass; may be NULL) (sim/acct_policy.py, _limit_reason and
 * _bf_passes_over). Sets the job's nodes and CPUs as the limits count them (_tres). Only the
 * counts a limit applies to are read. */
static int limit_holds(PyObject *job, PyObject *user_use, PyObject *extra, const Limits *l,
                       long long *nodes, long long *cpus) {
    long long units;
    if (check_job(job) < 0 || read_ll(slot(job, F_UNITS), &units) < 0) return -1;
    *nodes = l->cpu_counted ? (units + l->per_node - 1) / l->per_node : units;
    *cpus = l->cpu_counted ? units : units * l->node_cpus;
    long long cap[3];
    PyObject *user = slot(job, F_USER);
    if (user_caps(l, user, cap) < 0) return -1;
    /* the limits that apply to this job: jobs, nodes (unless larger than the QOS's cap and
     * exempt), CPUs */
    int want[3] = {cap[0] >= 0, cap[1] >= 0 && !(l->exempt && l->max_nodes >= 0 && *nodes > l->max_nodes),
                   cap[2] >= 0};
    if (!(want[0] || want[1] || want[2])) return 0;
    long long c[3] = {0, 0, 0};
    if (add_use(user_use, user, want, c) < 0 || (extra != NULL && add_use(extra, user, want, c) < 0))
        return -1;
    if ((want[0] && c[0] + 1 > cap[0]) || (want[1] && *nodes > cap[1])) return HOLD_PASSED;
    return (want[1] && c[1] + *nodes > cap[1]) || (want[2] && c[2] + *cpus > cap[2]) ? HOLD_TESTED
                                                                                      : 0;
}

/* Add a started job to its user's counts in `extra` (a dict user -> [jobs, nodes, CPUs, 0],
 * the entry made when missing): sim/acct_policy.py, _count_start. */
static int count_start(PyObject *extra, PyObject *job, long long nodes, long long cpus) {
    PyObject *user = slot(job, F_USER);
    PyObject *use = PyDict_GetItemWithError(extra, user);
    if (use == NULL) {
        if (PyErr_Occurred()) return -1;
        use = Py_BuildValue("[iiii]", 0, 0, 0, 0);
        if (use == NULL || PyDict_SetItem(extra, user, use) < 0) {
            Py_XDECREF(use);
            return -1;
        }
        Py_DECREF(use); /* the dict holds it */
    }
    long long add[3] = {1, nodes, cpus};
    for (int k = 0; k < 3; k++) {
        long long v;
        if (use_count(use, k, &v) < 0) return -1;
        PyObject *o = PyLong_FromLongLong(v + add[k]);
        if (o == NULL || PyList_SetItem(use, k, o) < 0) return -1; /* steals o */
    }
    return 0;
}

/* limit_filter(order, stop, user_use, limits) -> (list[int], list[job]) | None
 * Indices (and the jobs) among the first `stop` jobs of `order` that no QOS limit on running jobs holds
 * back now (sim/acct_policy.py, _limit_reason, is the reference); None when it holds none
 * of them back (the usual case: the lists are only built from the first job it holds).
 * limits: (max_jobs, max_nodes, max_cpus, larger_jobs_exempt, cpu_counted, cpus_per_node,
 * node_cpus, user_limits), -1 for no limit. A CPU-counted job takes ceil(units / cpus_per_node) nodes; a
 * node-counted one units * node_cpus CPUs. */
/* (order, n, user_use, limits): the arguments of limit_filter(). */
static int parse_order_limits(PyObject *args, PyObject **order, Py_ssize_t *n, PyObject **user_use,
                              Limits *l) {
    PyObject *lim;
    if (!PyArg_ParseTuple(args, "O!nO!O", &PyList_Type, order, n, &PyDict_Type, user_use, &lim))
        return -1;
    return parse_limits(lim, l);
}

static PyObject *limit_filter(PyObject *self, PyObject *args) {
    PyObject *order, *user_use;
    Py_ssize_t stop;
    Limits l;
    if (parse_order_limits(args, &order, &stop, &user_use, &l) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(order);
    if (stop < n) n = stop < 0 ? 0 : stop;
    PyObject *out = NULL, *kept = NULL;  /* built from the first held job on */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *job = PyList_GET_ITEM(order, i);
        long long nodes, cpus;
        int held = limit_holds(job, user_use, NULL, &l, &nodes, &cpus);
        if (held < 0) goto fail;
        if (held && out == NULL) {  /* the jobs before this one were all kept */
            out = PyList_New(0);
            kept = PyList_GetSlice(order, 0, i);
            if (out == NULL || kept == NULL) goto fail;
            for (Py_ssize_t k = 0; k < i; k++)
                if (append_index(out, k) < 0) goto fail;
        }
        if (held || out == NULL) continue;
        if (append_index(out, i) < 0 || PyList_Append(kept, job) < 0) goto fail;
    }
    if (out == NULL) Py_RETURN_NONE;
    return Py_BuildValue("(NN)", out, kept);
fail:
    Py_XDECREF(out);
    Py_XDECREF(kept);
    return NULL;
}

/* limited_picks(order, depth, free, user_use, extra, limits) -> list[int]
 * The main pass under QOS limits on one partition without node pools (sim/job_scheduler.py,
 * _general_picks, is the reference): over the first `depth` jobs of `order` in order, a job
 * a limit holds back (counting `extra`) is skipped, a job larger than the units still free
 * ends the pass, any other starts: its index is returned and it is counted into `extra`. */
static PyObject *limited_picks(PyObject *self, PyObject *args) {
    PyObject *order, *user_use, *extra, *lim;
    Py_ssize_t depth;
    long long free_units;
    Limits l;
    if (!PyArg_ParseTuple(args, "O!nLO!O!O", &PyList_Type, &order, &depth, &free_units,
                          &PyDict_Type, &user_use, &PyDict_Type, &extra, &lim) ||
        parse_limits(lim, &l) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(order);
    if (depth < n) n = depth < 0 ? 0 : depth;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *job = PyList_GET_ITEM(order, i);
        long long nodes, cpus, units;
        int held = limit_holds(job, user_use, extra, &l, &nodes, &cpus);
        if (held < 0) goto fail;
        if (held) continue;
        if (read_ll(slot(job, F_UNITS), &units) < 0) goto fail;
        if (units > free_units) break;
        free_units -= units;
        if (append_index(out, i) < 0 || count_start(extra, job, nodes, cpus) < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* The backfill walk under QOS limits (plan_limited() below): `order` in priority order,
 * each job's hold checked at its turn, counting the jobs the walk started before it
 * (`extra`): one a limit holds is left out with no reservation, and counts towards the
 * depth n_test unless Slurm passes it over before its will-run test (HOLD_PASSED). Any
 * other job starts now or reserves its earliest start (whole nodes), as in plan_core():
 * the reservations made before a start stay, and the started job joins the running jobs
 * for the jobs after it. The order positions of the jobs it starts go into `out` (*n_out
 * of them); `held` has room for one per job. 0, or -1 with an exception. */
static int walk_limited(PyObject *order, Py_ssize_t n_test, const Params *p, long long free_now,
                        PyObject *ends, PyObject *user_use, const Limits *l, Held *held,
                        Py_ssize_t *out, Py_ssize_t *n_out) {
    *n_out = 0;
    Py_ssize_t n = PyList_GET_SIZE(order), last = -1, tested = 0;
    /* past the last job that fits the free units, nothing more starts */
    for (Py_ssize_t i = 0; i < n; i++) {
        long long u;
        if (read_ll(slot(PyList_GET_ITEM(order, i), F_UNITS), &u) < 0) return -1;
        if (u <= free_now) last = i;
    }
    if (last < 0) return 0;
    if (ends_load(&ends_buf, ends) < 0) return -1;
    if (map_build(&map, p, free_now, &ends_buf) < 0) return -1;
    PyObject *extra = PyDict_New();
    if (extra == NULL) return -1;
    Walk w = {free_now, 0, 0};
    int rc = -1;
    for (Py_ssize_t i = 0; i <= last && tested < n_test; i++) {
        PyObject *job = PyList_GET_ITEM(order, i);
        long long nodes, cpus, units;
        double limit;
        int h = limit_holds(job, user_use, extra, l, &nodes, &cpus);
        if (h < 0) goto done;
        if (h == HOLD_PASSED) continue;
        tested++;
        if (h) continue;
        if (read_ll(slot(job, F_UNITS), &units) < 0 || read_double(slot(job, F_LIMIT), &limit) < 0)
            goto done;
        int started = walk_turn(&w, p, held, units, limit);
        if (started < 0 || (started && count_start(extra, job, nodes, cpus) < 0)) goto done;
        if (started) out[(*n_out)++] = i;
    }
    rc = 0;
done:
    Py_DECREF(extra);
    return rc;
}

/* plan_limited(order, n_test, params, user_use, limits) -> list[int]
 * The backfill pass under QOS limits (sim/backfill.py, _plan_limited; its reference is
 * plan_limited_model in tests/sim/test_backfill_core.py): Slurm's walk in priority order
 * (walk_limited), where a job a limit holds at its turn, counting the jobs the walk started
 * before it, neither starts nor reserves. Returns the indices into order of the jobs it
 * starts now. */
static PyObject *plan_limited(PyObject *self, PyObject *args) {
    PyObject *order, *rec, *user_use, *lim, *ends, *started = NULL;
    Py_ssize_t n_test, n_out;
    Params p;
    long long free_now;
    Limits l;
    if (!PyArg_ParseTuple(args, "O!nOO!O", &PyList_Type, &order, &n_test, &rec, &PyDict_Type,
                          &user_use, &lim) ||
        parse_limits(lim, &l) < 0 || parse_params(rec, "plan_limited", &p, &free_now, &ends) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(order);
    if (n_test <= 0 || n == 0) return PyList_New(0);
    Held *held = PyMem_Malloc((size_t)n * sizeof(Held));
    Py_ssize_t *pos = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    if (held == NULL || pos == NULL)
        PyErr_NoMemory();
    else if (walk_limited(order, n_test, &p, free_now, ends, user_use, &l, held, pos, &n_out) == 0)
        started = index_list(pos, n_out, NULL);
    PyMem_Free(held);
    PyMem_Free(pos);
    return started;
}

/* ------------------------------------------------------------------ fair-share tick */

/* A writable 1-d array of n (any n if n < 0) int64 or float64 items. */
static int get_out(PyObject *o, Py_buffer *v, Py_ssize_t n, int is_int, const char *name) {
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return -1;
    const char *f = v->format ? v->format : "";
    int ok = v->ndim == 1 && (n < 0 || v->shape[0] == n) && v->itemsize == 8 &&
             (is_int ? (strcmp(f, "l") == 0 || strcmp(f, "q") == 0) : strcmp(f, "d") == 0);
    if (!ok) {
        PyBuffer_Release(v);
        if (n < 0)
            PyErr_Format(PyExc_TypeError, "%s: expected a writable 1-d %s array", name,
                         is_int ? "int64" : "float64");
        else
            PyErr_Format(PyExc_TypeError, "%s: expected a writable 1-d %s array of length %zd",
                         name, is_int ? "int64" : "float64", n);
        return -1;
    }
    return 0;
}

/* One tick's fold of the decayed usage (sim.priority.FairShare.tick); returns the total. */
static double fold_usage(double *usage, double *run, double *acc, double *stamp, Py_ssize_t n,
                         double now, double decay) {
    double total = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double a = acc[i] + run[i] * (now - stamp[i]);
        usage[i] = usage[i] * decay + a;
        acc[i] = 0.0;
        stamp[i] = now;
        total += usage[i];
    }
    return total;
}

/* fairshare_tick(usage, run_units, accrued, stamp, now, decay, n_users, out) -> total
 * One PriorityCalcPeriod tick of sim.priority.FairShare, in place: usage = usage * decay +
 * (accrued + run_units * (now - stamp)); accrued = 0; stamp = now; then, unless out is
 * None, the factor per user out = 2^(-(usage / total) * n_users), or 1 everywhere while
 * nobody has usage. Returns total, everyone's usage. */
static PyObject *fairshare_tick(PyObject *self, PyObject *args) {
    PyObject *o[5];
    double now, decay;
    Py_ssize_t n_users;
    if (!PyArg_ParseTuple(args, "OOOOddnO", &o[0], &o[1], &o[2], &o[3], &now, &decay, &n_users, &o[4]))
        return NULL;
    static const char *names[5] = {"usage", "run_units", "accrued", "stamp", "out"};
    Py_buffer v[5];
    Py_ssize_t n = -1;
    int n_bufs = o[4] == Py_None ? 4 : 5;
    for (int k = 0; k < n_bufs; k++) {
        if (get_out(o[k], &v[k], n, 0, names[k]) < 0) {
            while (k-- > 0) PyBuffer_Release(&v[k]);
            return NULL;
        }
        n = v[k].shape[0];
    }
    double *usage = v[0].buf, *run = v[1].buf, *acc = v[2].buf, *stamp = v[3].buf;
    double *out = n_bufs == 5 ? v[4].buf : NULL;
    double total = fold_usage(usage, run, acc, stamp, n, now, decay);
    double scale = (double)(n_users > 1 ? n_users : 1);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++)
        out[i] = total > 0 ? exp2(-(usage[i] / total) * scale) : 1.0;
    for (int k = 0; k < n_bufs; k++) PyBuffer_Release(&v[k]);
    return PyFloat_FromDouble(total);
}

/* advance_ticks(order, first, period, limit, w_age, max_age, w_fs, share[, whole_age])
 *     -> (tick, changed, total, last)
 * The PriorityCalcPeriod ticks first, first + period, ... up to `limit` (each < limit) at
 * which nothing but the tick happens (sim/engine.py, _quiet_ticks): at each, the fair-share
 * usage is folded as FairShare.tick does (share: None without fair share, else (usage,
 * run_units, accrued, stamp, half_life, n_users, last, total[, tree, associations])) and the
 * queue refreshed as refresh() does, stopping after the first tick whose refresh changed
 * the order. Returns the last tick done, whether its refresh changed the order, and the
 * fair share's total and last fold time after it. */
static PyObject *advance_ticks(PyObject *self, PyObject *args) {
    PyObject *order, *share;
    double first, period, limit, w_age, max_age, w_fs;
    int whole_age = 0;
    if (!PyArg_ParseTuple(args, "O!ddddddO|p", &PyList_Type, &order, &first, &period, &limit,
                          &w_age, &max_age, &w_fs, &share, &whole_age))
        return NULL;
    if (!(period > 0)) {
        PyErr_SetString(PyExc_ValueError, "period must be > 0");
        return NULL;
    }
    PyObject *o[4] = {NULL, NULL, NULL, NULL};
    static const char *names[4] = {"usage", "run_units", "accrued", "stamp"};
    double half_life = 0.0, last = 0.0, total = 0.0;
    Py_ssize_t n_users = 1, n = -1;
    int n_bufs = 0;
    Py_buffer v[4];
    FsView fsv = {NULL, 0, 1, 0.0, 1.0, 0, 0};
    if (share != Py_None) {
        if (!PyArg_ParseTuple(share, "OOOOdndd|pn;share: expected (usage, run_units, accrued, "
                                     "stamp, half_life, n_users, last, total[, tree, "
                                     "associations])",
                              &o[0], &o[1], &o[2], &o[3], &half_life, &n_users, &last, &total,
                              &fsv.tree, &fsv.associations))
            return NULL;
        for (; n_bufs < 4; n_bufs++) {
            if (get_out(o[n_bufs], &v[n_bufs], n, 0, names[n_bufs]) < 0) {
                while (n_bufs-- > 0) PyBuffer_Release(&v[n_bufs]);
                return NULL;
            }
            n = v[n_bufs].shape[0];
        }
        fsv.v = v[0].buf;
        fsv.n = n;
        fsv.scale = (double)(n_users > 1 ? n_users : 1);
    }
    double tick = first;
    int changed = 0;
    /* the queue is read once: until a tick's refresh changes its order, only priorities do */
    PrioItem *items;
    Py_ssize_t n_jobs = prio_items(order, &items);
    if (n_jobs < 0) changed = -1;
    while (changed >= 0) {
        if (n_bufs) {
            double dt = tick - last;
            if (dt > 0) {
                double decay = half_life > 0 ? pow(0.5, dt / half_life) : 1.0;
                total = fold_usage(v[0].buf, v[1].buf, v[2].buf, v[3].buf, n, tick, decay);
                last = tick;
            }
            fsv.total = total;
        }
        int unordered = n_jobs ? prio_tick(items, n_jobs, tick, w_age, max_age, whole_age, w_fs, &fsv) : 0;
        if (unordered < 0) {
            changed = -1;
            break;
        }
        if (unordered || !(tick + period < limit)) {
            changed = n_jobs ? prio_finish(order, items, n_jobs, unordered) : 0;
            break;
        }
        tick += period;
    }
    PyMem_Free(items);
    for (int k = 0; k < n_bufs; k++) PyBuffer_Release(&v[k]);
    if (changed < 0) return NULL;
    return Py_BuildValue("(dOdd)", tick, changed ? Py_True : Py_False, total, last);
}

/* queue_arrays(pending, running, pend_id, pend_units, pend_limit, pend_submit,
 * pend_eligible, run_id, run_units, run_limit, run_start)
 * Fill a queue snapshot's arrays (made by the caller with the dicts' lengths: int64 ids and
 * units, float64 times) from the jobs of the two dicts, in their order. */
static int fill_jobs(PyObject *jobs, Py_buffer *v, int running) {
    /* v: id, units, limit, then submit + eligible (pending) or start (running) */
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *job;
    int64_t *ids = v[0].buf, *units = v[1].buf;
    double *limit = v[2].buf, *a = v[3].buf, *b = running ? NULL : v[4].buf;
    while (PyDict_Next(jobs, &pos, &key, &job)) {
        if (Py_TYPE(job) != job_type) {
            PyErr_SetString(PyExc_TypeError, "sim._backfill: not a job of the registered class");
            return -1;
        }
        PyObject *f[N_SNAP];
        for (int k = 0; k < N_SNAP; k++) f[k] = *(PyObject **)((char *)job + snap_offsets[k]);
        if (f[S_ID] == NULL || f[S_UNITS] == NULL || f[S_LIMIT] == NULL ||
            (running ? f[S_START] == NULL : (f[S_SUBMIT] == NULL || f[S_ELIGIBLE] == NULL))) {
            PyErr_SetString(PyExc_AttributeError, "queue_arrays: a job field is unset");
            return -1;
        }
        ids[i] = PyLong_AsLongLong(f[S_ID]);
        units[i] = PyLong_AsLongLong(f[S_UNITS]);
        limit[i] = PyFloat_AsDouble(f[S_LIMIT]);
        if (running) a[i] = PyFloat_AsDouble(f[S_START]);
        else {
            a[i] = PyFloat_AsDouble(f[S_SUBMIT]);
            b[i] = PyFloat_AsDouble(f[S_ELIGIBLE]);
        }
        if (PyErr_Occurred()) return -1;
        i++;
    }
    return 0;
}

static PyObject *queue_arrays(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static const char *names[9] = {"pend_id", "pend_units", "pend_limit", "pend_submit",
                                   "pend_eligible", "run_id", "run_units", "run_limit", "run_start"};
    static const int is_int[9] = {1, 1, 0, 0, 0, 1, 1, 0, 0};
    if (nargs != 11 || !PyDict_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "queue_arrays(pending, running, 9 arrays)");
        return NULL;
    }
    if (job_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "sim._backfill: register() the job class first");
        return NULL;
    }
    Py_buffer v[9];
    int got = 0, ok = 0;
    for (; got < 9; got++) {
        Py_ssize_t n = PyDict_GET_SIZE(args[got < 5 ? 0 : 1]);
        if (get_out(args[2 + got], &v[got], n, is_int[got], names[got]) < 0) goto done;
    }
    if (fill_jobs(args[0], v, 0) < 0 || fill_jobs(args[1], v + 5, 1) < 0) goto done;
    ok = 1;
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

#include "_lifecycle.c"
#include "_evloop.c"
#include "_poolwalk.c"

static PyMethodDef methods[] = {
    {"register", register_job_type, METH_O, "Register the job class (its __slots__ offsets)."},
    {"plan", plan, METH_VARARGS, "The backfill pass: indices of the jobs it starts now."},
    {"estimate", estimate, METH_VARARGS, "squeue --start for one pending job."},
    {"refresh", refresh, METH_VARARGS, "Recompute priorities at a tick and sort the queue."},
    {"insort", insort, METH_VARARGS, "Insert a job into the queue in its order."},
    {"fairshare_tick", fairshare_tick, METH_VARARGS, "Fold usage and compute the factors."},
    {"advance_ticks", advance_ticks, METH_VARARGS, "Priority ticks at which nothing else happens."},
    {"limit_filter", limit_filter, METH_VARARGS, "The jobs no QOS limit on running jobs holds."},
    {"limited_picks", limited_picks, METH_VARARGS, "The main pass under QOS limits, one pool."},
    {"plan_limited", plan_limited, METH_VARARGS, "The backfill pass under QOS limits."},
    {"walk_pools", walk_pools, METH_VARARGS, "The backfill walk on node pools."},
    {"register_life", register_life, METH_VARARGS, "Register the job and record classes."},
    {"start_jobs", start_jobs, METH_VARARGS, "Start the queue's jobs at the given indices."},
    {"end_jobs", end_jobs, METH_VARARGS, "The job ends due now: release and log them."},
    {"run_loop", run_loop, METH_VARARGS, "The event loop of the common replay case."},
    {"queue_arrays", (PyCFunction)(void (*)(void))queue_arrays, METH_FASTCALL,
     "Fill a queue snapshot's arrays from the pending and running jobs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sim._backfill",
    "Compiled core of the simulator: the backfill map, the priority refresh, queue snapshots.", -1, methods,
};

PyMODINIT_FUNC PyInit__backfill(void) {
    for (int k = 0; k < N_PARAMS; k++) {
        if (param_keys[k] == NULL && (param_keys[k] = PyUnicode_InternFromString(PARAM_NAMES[k])) == NULL)
            return NULL;
    }
    return PyModule_Create(&module);
}
