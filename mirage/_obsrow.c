/* Mirage's observation builder, compiled: the per-sample queue summary row, the fit_*
 * context features and the tracking of job starts and ends between samples.
 *
 * The features and their meaning are documented in mirage/observation.py, which calls
 * these functions; tests/mirage/test_mirage_builder_reference.py checks the result against
 * the builder's NumPy version on a real queue stream. Arrays come in through the buffer
 * protocol (C-contiguous float64 or int64), so no NumPy headers are needed.
 *
 * Sums follow NumPy's pairwise summation and quantiles its sorted order; log1p is the C
 * library's (NumPy's SIMD log1p may differ from it by one float64 ulp, far below the
 * float32 the row is stored in).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Columns of the queue row: the order of QUEUE_FEATURES in mirage/observation.py, which
 * checks it against QUEUE_COLUMNS at import. */
enum {
    PEND_COUNT, RUN_COUNT, PEND_UNITS, PEND_ELIGIBLE_UNITS, RUN_UNITS, PEND_LIMIT_P50,
    PEND_LIMIT_P90, PEND_WAIT_P50, PEND_WAIT_P90, PEND_WAIT_MAX, PEND_JOB_UNITS_P50,
    PEND_JOB_UNITS_P90, RUN_LIMIT_P50, RUN_ELAPSED_P50, RUN_REMAINING_P10, RUN_REMAINING_P50,
    FREE_IN_1H, FREE_IN_6H, FREE_IN_24H, STARTED_COUNT, STARTED_WAIT_MEAN, STARTED_WAIT_P50,
    STARTED_WAIT_P90, STARTED_WAIT_MAX, PEND_WORK, PEND_ELIGIBLE_WORK, RUN_WORK, ENDED_COUNT,
    ENDED_USED_MEAN, ENDED_USED_P50, ENDED_WORK_RATIO, RUN_REMAINING_WORK, N_COLUMNS
};
static const char *COLUMN_NAMES[N_COLUMNS] = {
    "pend_count", "run_count", "pend_units", "pend_eligible_units", "run_units",
    "pend_limit_p50", "pend_limit_p90", "pend_wait_p50", "pend_wait_p90", "pend_wait_max",
    "pend_job_units_p50", "pend_job_units_p90", "run_limit_p50", "run_elapsed_p50",
    "run_remaining_p10", "run_remaining_p50", "free_in_1h", "free_in_6h", "free_in_24h",
    "started_count", "started_wait_mean", "started_wait_p50", "started_wait_p90",
    "started_wait_max", "pend_work", "pend_eligible_work", "run_work", "ended_count",
    "ended_used_mean", "ended_used_p50", "ended_work_ratio", "run_remaining_work",
};

/* ------------------------------------------------------------------ scratch and helpers */

static double *scratch = NULL; /* grows; the GIL makes one buffer safe */
static Py_ssize_t scratch_cap = 0;

static double *need(Py_ssize_t n) {
    if (n > scratch_cap) {
        Py_ssize_t cap = n < 1024 ? 1024 : 2 * n;
        double *p = realloc(scratch, (size_t)cap * sizeof(double));
        if (p == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        scratch = p;
        scratch_cap = cap;
    }
    return scratch;
}

/* NumPy's pairwise summation of float64 (umath loops_utils): blocks of 128, unrolled by 8. */
static double pairwise_sum(const double *a, Py_ssize_t n) {
    if (n < 8) {
        double res = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        Py_ssize_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* Ascending in-place sort of doubles without NaN: quicksort, insertion sort below 16. */
static void sort_numbers(double *a, Py_ssize_t n) {
    while (n > 16) {
        double x = a[0], y = a[n / 2], z = a[n - 1], p;
        p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        Py_ssize_t i = 0, j = n - 1;
        for (;;) {
            while (a[i] < p) i++;
            while (a[j] > p) j--;
            if (i >= j) break;
            double t = a[i];
            a[i] = a[j];
            a[j] = t;
            i++;
            j--;
        }
        /* recurse into the smaller part, loop on the larger */
        if (j + 1 < n - j - 1) {
            sort_numbers(a, j + 1);
            a += j + 1;
            n -= j + 1;
        } else {
            sort_numbers(a + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        double v = a[i];
        Py_ssize_t k = i;
        while (k > 0 && a[k - 1] > v) {
            a[k] = a[k - 1];
            k--;
        }
        a[k] = v;
    }
}

/* Ascending in-place sort with NaNs last, as np.sort orders them. */
static void sort_doubles(double *a, Py_ssize_t n) {
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (a[i] != a[i]) continue;
        double t = a[m];
        a[m++] = a[i];
        a[i] = t;
    }
    sort_numbers(a, m);
}

/* dst = src (n items), sorted as sort_doubles does. */
static void sorted_copy(double *dst, const double *src, Py_ssize_t n) {
    memcpy(dst, src, (size_t)n * sizeof(double));
    sort_doubles(dst, n);
}

/* The q quantile of an ascending array by the nearest-rank rule (0.0 if empty). */
static inline double quantile(const double *s, Py_ssize_t n, double q) {
    if (n == 0) return 0.0;
    Py_ssize_t k = (Py_ssize_t)(q * (double)n);
    return s[k < n - 1 ? k : n - 1];
}

static inline double npmin(double a, double b) { return (a != a || a < b) ? a : b; }

typedef struct {
    double count_norm, wait_norm;
} Norms;

static inline double wait_feature(const Norms *nm, double seconds) {
    double s = (seconds > 0.0 || seconds != seconds) ? seconds : 0.0;
    return log1p(s / 3600.0) * nm->wait_norm;
}

static inline double count_feature(const Norms *nm, Py_ssize_t n) {
    return log1p((double)n) * nm->count_norm;
}

/* A read-only C-contiguous 1-d buffer of float64 (kind 'd') or int64 (kind 'q'). */
static int get_buf(PyObject *obj, Py_buffer *view, char kind, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    int ok = view->itemsize == 8 && view->ndim <= 1 &&
             (kind == 'd' ? (f[0] == 'd' && f[1] == 0)
                          : ((f[0] == 'q' || f[0] == 'l') && f[1] == 0));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous 1-d %s array (got format '%s')",
                     what, kind == 'd' ? "float64" : "int64", view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ queue row */

enum {
    B_PEND_UNITS, B_PEND_LIMIT, B_PEND_SUBMIT, B_PEND_ELIGIBLE, B_RUN_UNITS, B_RUN_LIMIT,
    B_RUN_START, B_START_WAIT, B_END_LIMIT, B_END_USED, B_END_UNITS, N_BUFS
};
static const char *BUF_NAMES[N_BUFS] = {
    "pend_units", "pend_limit", "pend_submit", "pend_eligible", "run_units", "run_limit",
    "run_start", "start_wait", "end_limit", "end_used", "end_units",
};

typedef struct {
    double time, max_limit, u, lim;
    Norms nm;
    const int64_t *pu, *ru;
    const double *pl, *ps, *pe, *rl, *rs, *sw, *el, *eu, *en;
    Py_ssize_t np, nr, nsw, ne;
} RowIn;

static int pending_features(float *row, const RowIn *in) {
    Py_ssize_t n = in->np;
    double *t = need(2 * n);
    if (t == NULL) return -1;
    double *work = t + n;
    sorted_copy(t, in->pl, n);
    row[PEND_LIMIT_P50] = (float)(quantile(t, n, 0.5) * in->lim);
    row[PEND_LIMIT_P90] = (float)(quantile(t, n, 0.9) * in->lim);
    for (Py_ssize_t i = 0; i < n; i++) t[i] = in->time - in->ps[i];
    sort_doubles(t, n);
    row[PEND_WAIT_P50] = (float)wait_feature(&in->nm, quantile(t, n, 0.5));
    row[PEND_WAIT_P90] = (float)wait_feature(&in->nm, quantile(t, n, 0.9));
    row[PEND_WAIT_MAX] = (float)wait_feature(&in->nm, t[n - 1]);
    for (Py_ssize_t i = 0; i < n; i++) t[i] = (double)in->pu[i]; /* exact below 2^53 */
    sort_doubles(t, n);
    row[PEND_JOB_UNITS_P50] = (float)(quantile(t, n, 0.5) * in->u);
    row[PEND_JOB_UNITS_P90] = (float)(quantile(t, n, 0.9) * in->u);
    Py_ssize_t ne = 0;
    for (Py_ssize_t i = 0; i < n; i++) work[i] = (double)in->pu[i] * npmin(in->pl[i], in->max_limit);
    row[PEND_WORK] = (float)(pairwise_sum(work, n) * in->u * in->lim);
    for (Py_ssize_t i = 0; i < n; i++)
        if (in->pe[i] == in->pe[i]) t[ne++] = work[i];
    row[PEND_ELIGIBLE_WORK] = (float)(pairwise_sum(t, ne) * in->u * in->lim);
    return 0;
}

static int running_features(float *row, const RowIn *in) {
    static const double horizons[3] = {3600.0, 6 * 3600.0, 24 * 3600.0};
    static const int columns[3] = {FREE_IN_1H, FREE_IN_6H, FREE_IN_24H};
    Py_ssize_t n = in->nr;
    double *t = need(2 * n);
    if (t == NULL) return -1;
    double *rem = t + n;
    sorted_copy(t, in->rl, n);
    row[RUN_LIMIT_P50] = (float)(quantile(t, n, 0.5) * in->lim);
    for (Py_ssize_t i = 0; i < n; i++) {
        double elapsed = in->time - in->rs[i];
        double r = in->rl[i] - elapsed;
        t[i] = elapsed;
        rem[i] = (r != r || r > 0.0) ? r : 0.0; /* np.maximum(r, 0.0) */
    }
    double own = 0.0; /* each job's units by its own remaining limit */
    for (Py_ssize_t i = 0; i < n; i++) own += (double)in->ru[i] * npmin(rem[i], in->max_limit);
    row[RUN_REMAINING_WORK] = (float)(own * in->u * in->lim);
    for (int h = 0; h < 3; h++) { /* units of the jobs whose limits end within h */
        int64_t freed = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (rem[i] <= horizons[h]) freed += in->ru[i];
        row[columns[h]] = (float)((double)freed * in->u);
    }
    sort_doubles(t, n);
    row[RUN_ELAPSED_P50] = (float)(quantile(t, n, 0.5) * in->lim);
    sort_doubles(rem, n);
    row[RUN_REMAINING_P10] = (float)(quantile(rem, n, 0.1) * in->lim);
    row[RUN_REMAINING_P50] = (float)(quantile(rem, n, 0.5) * in->lim);
    /* run_work as FEATURE_VERSION 2-4 computed it (and their models were trained on): the
     * units in the snapshot's order against the remaining limits in ascending order. */
    double work = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) work += (double)in->ru[i] * npmin(rem[i], in->max_limit);
    row[RUN_WORK] = (float)(work * in->u * in->lim);
    return 0;
}

static int started_features(float *row, const RowIn *in) {
    Py_ssize_t n = in->nsw;
    double *t = need(n);
    if (t == NULL) return -1;
    sorted_copy(t, in->sw, n);
    row[STARTED_COUNT] = (float)count_feature(&in->nm, n);
    row[STARTED_WAIT_MEAN] = (float)wait_feature(&in->nm, pairwise_sum(t, n) / (double)n);
    row[STARTED_WAIT_P50] = (float)wait_feature(&in->nm, quantile(t, n, 0.5));
    row[STARTED_WAIT_P90] = (float)wait_feature(&in->nm, quantile(t, n, 0.9));
    row[STARTED_WAIT_MAX] = (float)wait_feature(&in->nm, t[n - 1]);
    return 0;
}

static int ended_features(float *row, const RowIn *in) {
    Py_ssize_t n = in->ne;
    double *t = need(n);
    if (t == NULL) return -1;
    double promised = 0.0, used_work = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double limit = npmin(in->el[i], in->max_limit);
        double used = npmin(in->eu[i], limit);
        t[i] = limit > 0 ? used / limit : 1.0;
        promised += in->en[i] * limit;
        used_work += in->en[i] * used;
    }
    sort_doubles(t, n);
    row[ENDED_COUNT] = (float)count_feature(&in->nm, n);
    row[ENDED_USED_MEAN] = (float)(pairwise_sum(t, n) / (double)n);
    row[ENDED_USED_P50] = (float)quantile(t, n, 0.5);
    if (promised > 0) row[ENDED_WORK_RATIO] = (float)(used_work / promised);
    return 0;
}

static PyObject *queue_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* queue_row(row, time, max_limit, total_units, count_norm, wait_norm, *buffers) */
    if (nargs != 6 + N_BUFS) {
        PyErr_Format(PyExc_TypeError, "queue_row takes %d arguments, got %zd", 6 + N_BUFS, nargs);
        return NULL;
    }
    RowIn in;
    in.time = PyFloat_AsDouble(args[1]);
    in.max_limit = PyFloat_AsDouble(args[2]);
    double total = PyFloat_AsDouble(args[3]);
    in.nm.count_norm = PyFloat_AsDouble(args[4]);
    in.nm.wait_norm = PyFloat_AsDouble(args[5]);
    if (PyErr_Occurred()) return NULL;
    in.u = 1.0 / total;
    in.lim = 1.0 / in.max_limit;

    Py_buffer out, b[N_BUFS];
    if (PyObject_GetBuffer(args[0], &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        return NULL;
    int got = 0, ok = 0;
    if (out.len != N_COLUMNS * (Py_ssize_t)sizeof(float) || out.itemsize != 4 || !out.format ||
        strcmp(out.format, "f") != 0) {
        PyErr_Format(PyExc_ValueError, "row must be %d float32, got %zd bytes", N_COLUMNS, out.len);
        goto done;
    }
    for (; got < N_BUFS; got++) {
        char kind = (got == B_PEND_UNITS || got == B_RUN_UNITS) ? 'q' : 'd';
        if (get_buf(args[6 + got], &b[got], kind, BUF_NAMES[got]) < 0) goto done;
    }
    in.pu = b[B_PEND_UNITS].buf;
    in.pl = b[B_PEND_LIMIT].buf;
    in.ps = b[B_PEND_SUBMIT].buf;
    in.pe = b[B_PEND_ELIGIBLE].buf;
    in.ru = b[B_RUN_UNITS].buf;
    in.rl = b[B_RUN_LIMIT].buf;
    in.rs = b[B_RUN_START].buf;
    in.sw = b[B_START_WAIT].buf;
    in.el = b[B_END_LIMIT].buf;
    in.eu = b[B_END_USED].buf;
    in.en = b[B_END_UNITS].buf;
    in.np = b[B_PEND_UNITS].len / 8;
    in.nr = b[B_RUN_UNITS].len / 8;
    in.nsw = b[B_START_WAIT].len / 8;
    in.ne = b[B_END_LIMIT].len / 8;
    if (b[B_PEND_LIMIT].len / 8 != in.np || b[B_PEND_SUBMIT].len / 8 != in.np ||
        b[B_PEND_ELIGIBLE].len / 8 != in.np || b[B_RUN_LIMIT].len / 8 != in.nr ||
        b[B_RUN_START].len / 8 != in.nr || b[B_END_USED].len / 8 != in.ne ||
        b[B_END_UNITS].len / 8 != in.ne) {
        PyErr_SetString(PyExc_ValueError, "queue_row: arrays of one group differ in length");
        goto done;
    }

    float *row = out.buf;
    memset(row, 0, N_COLUMNS * sizeof(float));
    int64_t pend_units = 0, eligible_units = 0, run_units = 0;
    for (Py_ssize_t i = 0; i < in.np; i++) {
        pend_units += in.pu[i];
        if (in.pe[i] == in.pe[i]) eligible_units += in.pu[i];
    }
    for (Py_ssize_t i = 0; i < in.nr; i++) run_units += in.ru[i];
    row[PEND_COUNT] = (float)count_feature(&in.nm, in.np);
    row[RUN_COUNT] = (float)count_feature(&in.nm, in.nr);
    row[PEND_UNITS] = (float)((double)pend_units * in.u);
    row[PEND_ELIGIBLE_UNITS] = (float)((double)eligible_units * in.u);
    row[RUN_UNITS] = (float)((double)run_units * in.u);
    if (in.np && pending_features(row, &in) < 0) goto done;
    if (in.nr && running_features(row, &in) < 0) goto done;
    if (in.nsw && started_features(row, &in) < 0) goto done;
    if (in.ne && ended_features(row, &in) < 0) goto done;
    ok = 1;
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&b[k]);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ fit_* features */

static PyObject *fit_features(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* fit_features(start_units, start_wait, start_time, units, cutoff, count_norm, wait_norm)
     * -> the six fit_* values (see ObservationBuilder._fit_features) */
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "fit_features takes 7 arguments");
        return NULL;
    }
    double units = PyFloat_AsDouble(args[3]), cutoff = PyFloat_AsDouble(args[4]);
    Norms nm = {PyFloat_AsDouble(args[5]), PyFloat_AsDouble(args[6])};
    if (PyErr_Occurred()) return NULL;
    Py_buffer su, sw, st;
    if (get_buf(args[0], &su, 'd', "start_units") < 0) return NULL;
    if (get_buf(args[1], &sw, 'd', "start_wait") < 0) {
        PyBuffer_Release(&su);
        return NULL;
    }
    if (get_buf(args[2], &st, 'd', "start_time") < 0) {
        PyBuffer_Release(&su);
        PyBuffer_Release(&sw);
        return NULL;
    }
    PyObject *res = NULL;
    Py_ssize_t n = su.len / 8;
    if (sw.len / 8 != n || st.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "fit_features: arrays differ in length");
        goto done;
    }
    double *t = need(2 * n);
    if (t == NULL) goto done;
    double *recent = t + n;
    const double *u = su.buf, *w = sw.buf, *s = st.buf;
    Py_ssize_t k = 0, r = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(u[i] <= units)) continue;
        t[k++] = w[i];
        if (s[i] >= cutoff) recent[r++] = w[i];
    }
    if (k == 0) {
        res = Py_BuildValue("(dddddd)", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        goto done;
    }
    double recent_mean = r ? wait_feature(&nm, pairwise_sum(recent, r) / (double)r) : 0.0;
    sort_doubles(t, k);
    res = Py_BuildValue("(dddddd)", count_feature(&nm, k),
                        wait_feature(&nm, pairwise_sum(t, k) / (double)k),
                        wait_feature(&nm, quantile(t, k, 0.5)),
                        wait_feature(&nm, quantile(t, k, 0.9)), count_feature(&nm, r), recent_mean);
done:
    PyBuffer_Release(&su);
    PyBuffer_Release(&sw);
    PyBuffer_Release(&st);
    return res;
}

/* ------------------------------------------------------------------ id matching */

/* An open-addressing table of distinct int64 ids to their positions (-1: empty slot). */
typedef struct {
    int64_t *keys, *vals;
    size_t mask, cap;
} IdTable;

static IdTable tables[3]; /* previous running, previous pending, running now */

static int table_build(IdTable *t, const int64_t *ids, Py_ssize_t n) {
    size_t cap = 16;
    while (cap < 2 * (size_t)n) cap <<= 1;
    if (cap > t->cap) {
        int64_t *k = realloc(t->keys, cap * sizeof(int64_t));
        if (k == NULL) goto oom;
        t->keys = k;
        int64_t *v = realloc(t->vals, cap * sizeof(int64_t));
        if (v == NULL) goto oom;
        t->vals = v;
        t->cap = cap;
    }
    t->mask = cap - 1;
    for (size_t i = 0; i < cap; i++) t->vals[i] = -1;
    for (Py_ssize_t j = 0; j < n; j++) {
        size_t h = ((uint64_t)ids[j] * 0x9E3779B97F4A7C15ull) >> 20 & t->mask;
        while (t->vals[h] >= 0 && t->keys[h] != ids[j]) h = (h + 1) & t->mask;
        t->keys[h] = ids[j];
        t->vals[h] = j;
    }
    return 0;
oom:
    PyErr_NoMemory();
    return -1;
}

static inline int64_t table_find(const IdTable *t, int64_t id) {
    size_t h = ((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 20 & t->mask;
    while (t->vals[h] >= 0) {
        if (t->keys[h] == id) return t->vals[h];
        h = (h + 1) & t->mask;
    }
    return -1;
}

/* ------------------------------------------------------------------ start and end tracking */

enum {
    T_PREV_IDS, T_PREV_SUBMIT, T_PREV_RUN_IDS, T_PREV_RUN_START, T_PREV_RUN_LIMIT,
    T_PREV_RUN_UNITS, T_RUN_IDS, T_RUN_START, T_RUN_UNITS, T_START_TIME, T_START_WAIT,
    T_START_UNITS, T_END_TIME, T_END_USED, T_END_UNITS, T_END_LIMIT, T_STARTS, T_ENDS, N_TRACK
};
static const char *TRACK_NAMES[N_TRACK] = {
    "prev_ids", "prev_submit", "prev_run_ids", "prev_run_start", "prev_run_limit",
    "prev_run_units", "run_ids", "run_start", "run_units", "start_time", "start_wait",
    "start_units", "end_time", "end_used", "end_units", "end_limit", "starts", "ends",
};
static const char TRACK_KINDS[N_TRACK + 1] = "qdqdddqdqdddddddww";

/* Keep the tracked records (rows of n doubles) whose time (row 0) is >= cutoff: copied
 * into out (rows of width w), in order; returns how many. */
static Py_ssize_t keep_recent(double *const *rows, int nrows, Py_ssize_t n, double cutoff,
                              double *out, Py_ssize_t w) {
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(rows[0][i] >= cutoff)) continue;
        for (int r = 0; r < nrows; r++) out[r * w + k] = rows[r][i];
        k++;
    }
    return k;
}

static PyObject *track(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* track(prev_time, time, cutoff, *arrays) -> (starts kept, ends kept)
     *
     * Jobs running now but not at the previous sample started in between: their start,
     * wait (start - submit if pending at the previous sample, else 0; at least 0) and
     * units are appended, in the order of run_ids, to the tracked starts (start_time,
     * start_wait, start_units). Jobs running then and gone now ended: the middle of the
     * interval, the time they ran (to that middle, clipped to [0, limit]), units and limit
     * are appended to the tracked ends. Records older than cutoff are dropped. The result
     * goes to `starts` (3 rows, at least len(start_time) + len(run_ids) wide) and `ends` (4
     * rows, at least len(end_time) + len(prev_run_ids) wide); the counts kept are returned,
     * -1 for a set that did not change (then its output is not written). */
    if (nargs != 3 + N_TRACK) {
        PyErr_Format(PyExc_TypeError, "track takes %d arguments", 3 + N_TRACK);
        return NULL;
    }
    double prev_time = PyFloat_AsDouble(args[0]), now = PyFloat_AsDouble(args[1]);
    double cutoff = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    Py_buffer b[N_TRACK];
    int got = 0;
    PyObject *res = NULL;
    for (; got < N_TRACK; got++) {
        if (TRACK_KINDS[got] == 'w') {
            if (PyObject_GetBuffer(args[3 + got], &b[got],
                                   PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
                goto done;
            if (b[got].itemsize != 8 || !b[got].format || strcmp(b[got].format, "d") != 0 ||
                b[got].ndim != 2 || b[got].shape[0] != (got == T_STARTS ? 3 : 4)) {
                PyErr_Format(PyExc_TypeError, "%s must be a writable (%d, n) float64 array",
                             TRACK_NAMES[got], got == T_STARTS ? 3 : 4);
                got++;
                goto done;
            }
        } else if (get_buf(args[3 + got], &b[got], TRACK_KINDS[got], TRACK_NAMES[got]) < 0)
            goto done;
    }
#define LEN(k) (b[k].len / 8)
    Py_ssize_t np_ = LEN(T_PREV_IDS), nr0 = LEN(T_PREV_RUN_IDS), nr = LEN(T_RUN_IDS);
    Py_ssize_t ns = LEN(T_START_TIME), ne = LEN(T_END_TIME);
    Py_ssize_t ws = b[T_STARTS].shape[1], we = b[T_ENDS].shape[1];
    if (LEN(T_PREV_SUBMIT) != np_ || LEN(T_PREV_RUN_START) != nr0 || LEN(T_PREV_RUN_LIMIT) != nr0 ||
        LEN(T_PREV_RUN_UNITS) != nr0 || LEN(T_RUN_START) != nr || LEN(T_RUN_UNITS) != nr ||
        LEN(T_START_WAIT) != ns || LEN(T_START_UNITS) != ns || LEN(T_END_USED) != ne ||
        LEN(T_END_UNITS) != ne || LEN(T_END_LIMIT) != ne || ws < ns + nr || we < ne + nr0) {
        PyErr_SetString(PyExc_ValueError, "track: array lengths do not match");
        goto done;
    }
#undef LEN
    double *starts = b[T_STARTS].buf, *ends = b[T_ENDS].buf;
    double *old_s[3] = {b[T_START_TIME].buf, b[T_START_WAIT].buf, b[T_START_UNITS].buf};
    double *old_e[4] = {b[T_END_TIME].buf, b[T_END_USED].buf, b[T_END_UNITS].buf,
                        b[T_END_LIMIT].buf};
    Py_ssize_t ks = keep_recent(old_s, 3, ns, cutoff, starts, ws);
    Py_ssize_t ke = keep_recent(old_e, 4, ne, cutoff, ends, we);
    int new_s = 0, new_e = 0;
    if (prev_time == prev_time) {
        const int64_t *prev_ids = b[T_PREV_IDS].buf, *prev_run = b[T_PREV_RUN_IDS].buf;
        const int64_t *run = b[T_RUN_IDS].buf, *run_units = b[T_RUN_UNITS].buf;
        const double *prev_submit = b[T_PREV_SUBMIT].buf, *run_start = b[T_RUN_START].buf;
        const double *prev_start = b[T_PREV_RUN_START].buf, *prev_limit = b[T_PREV_RUN_LIMIT].buf;
        const double *prev_units = b[T_PREV_RUN_UNITS].buf;
        if (nr) {
            if (table_build(&tables[0], prev_run, nr0) < 0 ||
                table_build(&tables[1], prev_ids, np_) < 0)
                goto done;
            for (Py_ssize_t i = 0; i < nr; i++) {
                if (table_find(&tables[0], run[i]) >= 0) continue;
                new_s = 1;
                if (!(run_start[i] >= cutoff)) continue;
                int64_t p = table_find(&tables[1], run[i]);
                /* a wait only from a known submit time (np.where(isnan(submit), 0, ...)) */
                double w = (p >= 0 && prev_submit[p] == prev_submit[p])
                               ? run_start[i] - prev_submit[p] : 0.0;
                starts[ks] = run_start[i];
                starts[ws + ks] = (w >= 0.0 || w != w) ? w : 0.0; /* np.maximum(w, 0.0) */
                starts[2 * ws + ks] = (double)run_units[i];
                ks++;
            }
        }
        if (nr0) {
            double mid = 0.5 * (prev_time + now);
            if (table_build(&tables[2], run, nr) < 0) goto done;
            for (Py_ssize_t j = 0; j < nr0; j++) {
                if (table_find(&tables[2], prev_run[j]) >= 0) continue;
                new_e = 1;
                if (!(mid >= cutoff)) continue;
                double limit = prev_limit[j], x = mid - prev_start[j];
                x = (x != x || x > 0.0) ? x : 0.0; /* np.clip(x, 0.0, limit) */
                ends[ke] = mid;
                ends[we + ke] = (x != x || x < limit) ? x : limit;
                ends[2 * we + ke] = prev_units[j];
                ends[3 * we + ke] = limit;
                ke++;
            }
        }
    }
    res = Py_BuildValue("(nn)", (new_s || ks != ns) ? ks : (Py_ssize_t)-1,
                        (new_e || ke != ne) ? ke : (Py_ssize_t)-1);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&b[k]);
    return res;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"queue_row", (PyCFunction)(void (*)(void))queue_row, METH_FASTCALL,
     "Fill one sample's float32 queue summary row."},
    {"fit_features", (PyCFunction)(void (*)(void))fit_features, METH_FASTCALL,
     "The six fit_* context values for a successor of a given size."},
    {"track", (PyCFunction)(void (*)(void))track, METH_FASTCALL,
     "The jobs that started and ended between two samples."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mirage._obsrow",
    "Compiled core of Mirage's observation builder.", -1, methods,
};

PyMODINIT_FUNC PyInit__obsrow(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *names = PyTuple_New(N_COLUMNS);
    if (names == NULL) goto fail;
    for (int i = 0; i < N_COLUMNS; i++) {
        PyObject *s = PyUnicode_FromString(COLUMN_NAMES[i]);
        if (s == NULL) {
            Py_DECREF(names);
            goto fail;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    if (PyModule_AddObject(m, "QUEUE_COLUMNS", names) < 0) {
        Py_DECREF(names);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
