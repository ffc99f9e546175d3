/* The event loop of the common replay case, compiled (included by sim/_backfill.c after
 * sim/_lifecycle.c): Simulator._loop (sim/engine.py, the reference) where the compiled life
 * cycle applies to trace arrivals and there is no BackfillCycle. Each turn's bookkeeping,
 * arrivals and job ends, the due passes (_due_passes), the priority refresh and quiet
 * ticks, and the main and backfill passes on one partition run here, on the compiled cores
 * above; the rare events (injected jobs, timers, pool steps), the main pass over several
 * partitions and the starts of jobs with dependency waiters call the Python methods.
 *
 * ev: the tuple Simulator._loop_ctx builds (its items: the EV_* indices below). */

enum { EV_BF, EV_BF_INT, EV_SCHED_INT, EV_TIME_DEP, EV_QUIET, EV_PERIOD, EV_DELAY, EV_AV_T,
       EV_AV_U, EV_AV_SEG, EV_SUBMIT, EV_TIMER, EV_KICK, EV_LIMITS, EV_SINGLE, EV_DEPTH,
       EV_N_TEST, EV_PARAMS, EV_BF_WINDOW, EV_N_USERS, N_EV };

typedef struct {
    double bf_int, sched_int, period, delay, bf_window;
    int bf, time_dep, quiet, single;
    long long k_submit, k_timer, k_kick, depth;
    /* borrowed from the tuple: the availability steps, the QOS limits as limited_picks
     * takes them (None without limits on running jobs), bf_max_job_test, the MapParams */
    PyObject *av_t, *av_u, *av_seg, *limits, *n_test, *params;
    Py_ssize_t n_users;  /* PriorityModel.n_users */
} Ev;

static int ev_parse(PyObject *ev, Ev *E) {
    if (!PyTuple_Check(ev) || PyTuple_GET_SIZE(ev) != N_EV) {
        PyErr_SetString(PyExc_TypeError, "event loop: a bad context tuple");
        return -1;
    }
#define ITEM(k) PyTuple_GET_ITEM(ev, k)
    E->bf = PyObject_IsTrue(ITEM(EV_BF));
    E->time_dep = PyObject_IsTrue(ITEM(EV_TIME_DEP));
    E->quiet = PyObject_IsTrue(ITEM(EV_QUIET));
    E->av_t = ITEM(EV_AV_T);
    E->av_u = ITEM(EV_AV_U);
    E->av_seg = ITEM(EV_AV_SEG);
    E->single = PyObject_IsTrue(ITEM(EV_SINGLE));
    E->limits = ITEM(EV_LIMITS);
    E->n_test = ITEM(EV_N_TEST);
    E->params = ITEM(EV_PARAMS);
    if (read_double(ITEM(EV_BF_INT), &E->bf_int) < 0 ||
        read_double(ITEM(EV_SCHED_INT), &E->sched_int) < 0 ||
        read_double(ITEM(EV_PERIOD), &E->period) < 0 || read_double(ITEM(EV_DELAY), &E->delay) < 0 ||
        read_ll(ITEM(EV_SUBMIT), &E->k_submit) < 0 || read_ll(ITEM(EV_TIMER), &E->k_timer) < 0 ||
        read_ll(ITEM(EV_KICK), &E->k_kick) < 0 || read_ll(ITEM(EV_DEPTH), &E->depth) < 0 ||
        read_double(ITEM(EV_BF_WINDOW), &E->bf_window) < 0 ||
        (E->n_users = PyLong_AsSsize_t(ITEM(EV_N_USERS))) == -1)
        return -1;
#undef ITEM
    if (!PyList_Check(E->av_t) || !PyList_Check(E->av_u) || !PyList_Check(E->av_seg) ||
        PyList_GET_SIZE(E->av_u) != PyList_GET_SIZE(E->av_t) ||
        PyList_GET_SIZE(E->av_seg) != PyList_GET_SIZE(E->av_t)) {
        PyErr_SetString(PyExc_TypeError, "event loop: availability steps must be equal lists");
        return -1;
    }
    return 0;
}

/* A SimState number or flag, read (st_d, st_flag) or set (st_set_flag); a float attribute
 * of another object set (set_float_attr). */
static int st_d(const Life *L, int k, double *out) {
    PyObject *o = st_get(L, k);
    if (o == NULL) return -1;
    int r = read_double(o, out);
    Py_DECREF(o);
    return r;
}

static int set_float_attr(PyObject *obj, int k, double v) {
    PyObject *o = PyFloat_FromDouble(v);
    int r = o == NULL ? -1 : PyObject_SetAttr(obj, attr_keys[k], o);
    Py_XDECREF(o);
    return r;
}

static int st_flag(const Life *L, int k) {
    PyObject *o = st_get(L, k);
    if (o == NULL) return -1;
    int r = PyObject_IsTrue(o);
    Py_DECREF(o);
    return r;
}

static inline int st_set_flag(const Life *L, int k, int v) {
    return st_put(L, k, PyBool_FromLong(v));
}

/* The heap's first event: 1 with its time, kind and time object (borrowed), 0 if empty. */
static int heap_top(PyObject *heap, double *t, long long *kind, PyObject **t_obj) {
    if (PyList_GET_SIZE(heap) == 0) return 0;
    PyObject *top = PyList_GET_ITEM(heap, 0);
    if (!PyTuple_Check(top) || PyTuple_GET_SIZE(top) != 4) {
        PyErr_SetString(PyExc_TypeError, "heap: expected 4-tuples");
        return -1;
    }
    *t_obj = PyTuple_GET_ITEM(top, 0);
    if (read_double(*t_obj, t) < 0 || read_ll(PyTuple_GET_ITEM(top, 1), kind) < 0) return -1;
    return 1;
}

/* Whether the heap's first event is of `kind` at `t` (1), not (0), -1 on error. */
static int heap_due(PyObject *heap, double t, long long kind) {
    double et;
    long long k;
    PyObject *o;
    int r = heap_top(heap, &et, &k, &o);
    return r <= 0 ? r : (et == t && k == kind);
}

/* MainScheduler._min_pending_units: the smallest eligible pending job's units, cached. */
static int min_pending_units(const Life *L, long long *out) {
    if (st_ll(L, A_MINU, out) < 0) return -1;
    if (*out >= 0) return 0;
    PyObject *h = st_container(L, A_MIN_UNITS, &PyList_Type);
    PyObject *pending = st_container(L, A_PENDING, &PyDict_Type);
    if (h == NULL || pending == NULL) return -1;
    while (PyList_GET_SIZE(h) > 0) {
        PyObject *top = PyList_GET_ITEM(h, 0);
        long long units, seq, jseq;
        double eligible;
        if (!PyTuple_Check(top) || PyTuple_GET_SIZE(top) != 3) {
            PyErr_SetString(PyExc_TypeError, "min_units: expected (units, seq, id) tuples");
            return -1;
        }
        PyObject *job = PyDict_GetItemWithError(pending, PyTuple_GET_ITEM(top, 2));
        if (job == NULL && PyErr_Occurred()) return -1;
        if (read_ll(PyTuple_GET_ITEM(top, 0), &units) < 0 ||
            read_ll(PyTuple_GET_ITEM(top, 1), &seq) < 0)
            return -1;
        if (job != NULL) {
            if (check_job(job) < 0 || read_ll(slot(job, F_SEQ), &jseq) < 0 ||
                jread_d(job, J_ELIGIBLE, &eligible) < 0)
                return -1;
            if (jseq == seq && !isnan(eligible)) {
                *out = units;
                return st_set_ll(L, A_MINU, units);
            }
        }
        PyObject *r = heap_call(heappop_fn, h, NULL);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    *out = 1LL << 62;
    return st_set_ll(L, A_MINU, *out);
}

/* MainScheduler._can_any_start. */
static int can_any_start(const Life *L, double now) {
    double cg;
    long long free_units, minu;
    if (st_d(L, A_CG_UNTIL, &cg) < 0) return -1;
    if (now < cg) return 0;
    if (st_ll(L, A_FREE, &free_units) < 0) return -1;
    if (free_units <= 0) return 0;
    if (min_pending_units(L, &minu) < 0) return -1;
    return free_units >= minu;
}

/* ------------------------------------------------------------------ scheduler passes */

/* The fair share as advance_ticks() takes it: (usage, run_units, accrued, stamp,
 * half_life, n_users, last, total, tree, associations); None without fair-share weight. */
static PyObject *share_args(const Life *L, const Ev *E, PyObject *fs) {
    if (L->w_fs == 0.0) Py_RETURN_NONE;
    static const int keys[9] = {A_USAGE, A_RUN_UNITS, A_ACCRUED, A_STAMP, A_HALF_LIFE, A_LAST,
                                A_TOTAL, A_TREE, A_ASSOCIATIONS};
    PyObject *v[9] = {NULL};
    PyObject *r = NULL;
    for (int k = 0; k < 9; k++)
        if ((v[k] = PyObject_GetAttr(fs, attr_keys[keys[k]])) == NULL) goto done;
    r = Py_BuildValue("(OOOOOnOOOO)", v[0], v[1], v[2], v[3], v[4], E->n_users, v[5], v[6],
                      v[7], v[8]);
done:
    for (int k = 0; k < 9; k++) Py_XDECREF(v[k]);
    return r;
}

/* PriorityModel.advance_ticks(order, first, limit, max_age): the calc ticks from `first`
 * on, before `limit`, folded and refreshed up to the first that changes the order (the
 * compiled advance_ticks()); the fair share's total, scale and last fold follow. Sets
 * *tick, the last tick done; 1 if its order changed, 0 if not, -1 on error. */
static int prio_ticks(const Life *L, const Ev *E, double first, double limit, double *tick) {
    PyObject *order = st_container(L, A_ORDER, &PyList_Type), *fs = st_get(L, A_FAIRSHARE);
    PyObject *share = fs ? share_args(L, E, fs) : NULL;
    PyObject *args = share ? Py_BuildValue("(OddddddO)", order, first, E->period, limit,
                                           L->w_age, L->max_age, L->w_fs, share) : NULL;
    PyObject *r = args && order ? advance_ticks(NULL, args) : NULL;
    int changed = -1;
    double total, last, old_last;
    if (r != NULL && PyArg_ParseTuple(r, "dpdd", tick, &changed, &total, &last)) {
        if (share != Py_None) {
            if (read_double(PyTuple_GET_ITEM(share, 6), &old_last) < 0 ||
                (last != old_last &&
                 (PyObject_SetAttr(fs, attr_keys[A_TOTAL], PyTuple_GET_ITEM(r, 2)) < 0 ||
                  PyObject_SetAttr(fs, attr_keys[A_LAST], PyTuple_GET_ITEM(r, 3)) < 0 ||
                  set_float_attr(fs, A_SCALE, (double)(E->n_users > 1 ? E->n_users : 1)) < 0)))
                changed = -1;
        }
    } else {
        changed = -1;
    }
    Py_XDECREF(r);
    Py_XDECREF(args);
    Py_XDECREF(share);
    Py_XDECREF(fs);
    return changed;
}

/* _refresh_priorities: the priorities as of the latest calc tick, if not yet computed;
 * 1 if the order changed. */
static int refresh_due(const Life *L, const Ev *E, double now) {
    double prio_tick, tick;
    if (!E->time_dep) return 0;
    if (st_d(L, A_PRIO_TICK, &prio_tick) < 0) return -1;
    double at = floor(now / E->period) * E->period;
    if (at <= prio_tick) return 0;
    if (st_put(L, A_PRIO_TICK, PyFloat_FromDouble(at)) < 0 ||
        st_put(L, A_CALC_NEXT, PyFloat_FromDouble(at + E->period)) < 0)
        return -1;
    return prio_ticks(L, E, at, at + E->period / 2, &tick);
}

/* _start_indices(idx, backfill): compiled unless a start hook or a dependency waits. */
static int start_idx(const Life *L, PyObject *idx, int backfill) {
    if (PyList_GET_SIZE(idx) == 0) return 0;
    PyObject *hook = PyObject_GetAttr(L->sim, attr_keys[A_ON_START]);
    PyObject *deps = st_get(L, A_DEPS);
    PyObject *waiters = deps ? PyObject_GetAttr(deps, attr_keys[A_WAITERS]) : NULL;
    int plain = hook == Py_None && waiters != NULL && PyDict_Check(waiters) &&
                PyDict_GET_SIZE(waiters) == 0;
    int bad = hook == NULL || waiters == NULL;
    Py_XDECREF(hook);
    Py_XDECREF(deps);
    Py_XDECREF(waiters);
    if (bad) return -1;
    if (plain) return start_core(L, idx, backfill);
    PyObject *r = PyObject_CallMethodObjArgs(L->sim, attr_keys[A_START_INDICES], idx,
                                             backfill ? Py_True : Py_False, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* strict_picks on one partition: the queue's first `depth` jobs in order while they fit. */
static PyObject *strict_single(PyObject *order, long long depth, long long free_units) {
    PyObject *out = PyList_New(0);
    Py_ssize_t n = PyList_GET_SIZE(order);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n && i < depth; i++) {
        long long units;
        PyObject *job = PyList_GET_ITEM(order, i);
        if (check_job(job) < 0 || read_ll(slot(job, F_UNITS), &units) < 0) goto fail;
        if (units > free_units) break;
        free_units -= units;
        if (append_index(out, i) < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* _main_pass(depth) (depth -1: the whole queue): on one partition compiled, else Python. */
static int main_pass(const Life *L, const Ev *E, long long depth) {
    PyObject *order = st_container(L, A_ORDER, &PyList_Type);
    long long free_units;
    if (order == NULL || st_ll(L, A_FREE, &free_units) < 0) return -1;
    if (depth < 0) depth = PyList_GET_SIZE(order);
    if (!E->single) {
        PyObject *r = PyObject_CallMethod(L->sim, "_main_pass", "L", depth);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    PyObject *picks;
    if (E->limits != Py_None) {
        PyObject *user_use = st_container(L, A_USER_USE, &PyDict_Type);
        if (user_use == NULL) return -1;
        PyObject *extra = PyDict_New();  /* what this pass starts, per user */
        if (extra == NULL) return -1;
        PyObject *args = Py_BuildValue("(OLLONO)", order, depth, free_units, user_use, extra,
                                       E->limits);
        picks = args ? limited_picks(NULL, args) : NULL;
        Py_XDECREF(args);
    } else {
        picks = strict_single(order, depth, free_units);
    }
    if (picks == NULL) return -1;
    int r = start_idx(L, picks, 0);
    Py_DECREF(picks);
    return r;
}

/* _backfill_pass without node pools or BackfillCycle: the priority refresh, the plan
 * (under QOS limits when there are any) over the map's inputs now, its starts. */
static int backfill_pass(const Life *L, const Ev *E, double now) {
    if (refresh_due(L, E, now) < 0) return -1;
    PyObject *order = st_container(L, A_ORDER, &PyList_Type);
    PyObject *ends = st_container(L, A_ENDS, &PyList_Type);
    PyObject *p = E->params, *now_o = st_get(L, A_NOW), *free_o = st_get(L, A_FREE);
    int bad = order == NULL || ends == NULL || now_o == NULL || free_o == NULL ||
              PyObject_SetAttr(p, param_keys[P_NOW], now_o) < 0 ||
              PyObject_SetAttr(p, param_keys[P_FREE], free_o) < 0 ||
              PyObject_SetAttr(p, param_keys[P_ENDS], ends) < 0;
    Py_XDECREF(now_o);
    Py_XDECREF(free_o);
    if (bad) return -1;
    PyObject *horizon = PyFloat_FromDouble(now + E->bf_window);
    if (horizon == NULL) return -1;
    bad = PyObject_SetAttr(p, param_keys[P_HORIZON], horizon) < 0;
    Py_DECREF(horizon);
    if (bad) return -1;
    PyObject *args, *idx;
    if (E->limits != Py_None) {
        PyObject *user_use = st_container(L, A_USER_USE, &PyDict_Type);
        if (user_use == NULL) return -1;
        args = PyTuple_Pack(5, order, E->n_test, p, user_use, E->limits);
        idx = args ? plan_limited(NULL, args) : NULL;
    } else {
        args = PyTuple_Pack(3, order, E->n_test, p);
        idx = args ? plan(NULL, args) : NULL;
    }
    Py_XDECREF(args);
    if (idx == NULL) return -1;
    int r = start_idx(L, idx, 1);
    Py_DECREF(idx);
    return r;
}

/* _due_passes: the priority refresh and the main scheduler's passes, where due now. */
static int due_passes(const Life *L, const Ev *E, double t) {
    int main_dirty = st_flag(L, A_MAIN_DIRTY), full_due = st_flag(L, A_FULL_MAIN_DUE);
    double calc_next;
    if (main_dirty < 0 || full_due < 0 || st_d(L, A_CALC_NEXT, &calc_next) < 0) return -1;
    int on_interval = E->sched_int > 0 && fmod(t, E->sched_int) == 0;
    int full_main = full_due && on_interval;
    if (!(main_dirty || full_main || t >= calc_next)) return 0;
    int can = can_any_start(L, t);
    if (can < 0) return -1;
    if (can && t >= calc_next) {
        int changed = refresh_due(L, E, t);
        if (changed < 0) return -1;
        if (changed) {
            if (st_set_flag(L, A_BF_DIRTY, 1) < 0 || st_set_flag(L, A_FULL_MAIN_DUE, 1) < 0)
                return -1;
            full_main = on_interval;
        }
    }
    if (main_dirty && can) {
        if (main_pass(L, E, E->depth) < 0 || (can = can_any_start(L, t)) < 0) return -1;
    }
    if (st_set_flag(L, A_MAIN_DIRTY, 0) < 0) return -1;
    if (full_main) {
        if ((can && main_pass(L, E, -1) < 0) || st_set_flag(L, A_FULL_MAIN_DUE, 0) < 0)
            return -1;
        PyObject *now_o = st_get(L, A_NOW);
        if (now_o == NULL || st_put(L, A_MAIN_RAN_AT, now_o) < 0) return -1;
    }
    return 0;
}

/* Simulator._quiet_ticks(first, before, until): the calc ticks at which nothing else is
 * due, done at once up to the first that changes the order, with that tick's passes. */
static int quiet_ticks(const Life *L, const Ev *E, double first, double before, double until) {
    double limit = before, tick;
    if (until < INFINITY) {
        double last = floor(until / E->period) * E->period + E->period / 2;
        if (last < limit) limit = last;
    }
    int changed = prio_ticks(L, E, first, limit, &tick);
    if (changed < 0) return -1;
    PyObject *tick_o = PyFloat_FromDouble(tick);
    if (tick_o == NULL) return -1;
    int bad = put_b(L->st, soff[A_NOW], tick_o) < 0 || put_b(L->st, soff[A_PRIO_TICK], tick_o) < 0 ||
              st_put(L, A_CALC_NEXT, PyFloat_FromDouble(tick + E->period)) < 0 ||
              (E->bf && put_b(L->st, soff[A_BF_RAN_AT], tick_o) < 0);
    if (!bad && changed) {
        bad = st_set_flag(L, A_BF_DIRTY, 1) < 0 || st_set_flag(L, A_FULL_MAIN_DUE, 1) < 0;
        if (!bad && E->sched_int > 0 && fmod(tick, E->sched_int) == 0)
            bad = main_pass(L, E, -1) < 0 || st_set_flag(L, A_FULL_MAIN_DUE, 0) < 0 ||
                  put_b(L->st, soff[A_MAIN_RAN_AT], tick_o) < 0;
    }
    Py_DECREF(tick_o);
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------------ the loop */

/* The next multiple of `step` at or after now; past now if the pass ran at now. */
static double next_pass(double now, double step, double ran_at) {
    double t = ceil(now / step) * step;
    return t <= now && ran_at == now ? t + step : t;
}

/* One turn's wake-up time (the top of _loop): 1 with *t (and *t_obj, the object Python
 * would take as the time, or NULL for a new float) and *kick, 2 when quiet ticks were done
 * (turn again), 0 when nothing is due up to `until`, -1 on error. */
static int next_time(const Life *L, const Ev *E, PyObject *heap, Py_ssize_t n, double until,
                     double *t, PyObject **t_obj, double *kick) {
    long long kind, cursor, av_at, free_units, minu;
    double now, kick_at;
    PyObject *cols = lc(L, LC_ARRAYS);
    PyObject *submit = n ? PyTuple_GET_ITEM(cols, T_SUBMIT) : NULL;
    Py_ssize_t n_av = PyList_GET_SIZE(E->av_t);
    *t = INFINITY;
    *t_obj = NULL;
    int any_heap = heap_top(heap, t, &kind, t_obj);
    if (any_heap < 0 || st_ll(L, A_CURSOR, &cursor) < 0 || st_ll(L, A_AV_AT, &av_at) < 0 ||
        st_d(L, A_NOW, &now) < 0 || st_d(L, A_KICK_AT, &kick_at) < 0 ||
        st_ll(L, A_FREE, &free_units) < 0)
        return -1;
    if (cursor < n) {
        double ts;
        if (read_double(PyList_GET_ITEM(submit, cursor), &ts) < 0) return -1;
        if (ts < *t) *t = ts, *t_obj = NULL;
    }
    if (av_at < n_av) {
        double ta;
        PyObject *o = PyList_GET_ITEM(E->av_t, av_at);
        if (read_double(o, &ta) < 0) return -1;
        if (ta < *t) *t = ta, *t_obj = o;
    }
    *kick = kick_at > now ? kick_at : INFINITY;
    if (*kick < *t) *t = *kick, *t_obj = NULL;
    if (free_units > 0 && min_pending_units(L, &minu) < 0) return -1;
    if (free_units > 0 && free_units >= minu) {
        int bf_dirty = E->bf ? st_flag(L, A_BF_DIRTY) : 0;
        int full = E->sched_int > 0 ? st_flag(L, A_FULL_MAIN_DUE) : 0;
        double ran;
        if (bf_dirty < 0 || full < 0) return -1;
        if (bf_dirty) {
            if (st_d(L, A_BF_RAN_AT, &ran) < 0) return -1;
            double tb = next_pass(now, E->bf_int, ran);
            if (tb < *t) *t = tb, *t_obj = NULL;
        }
        if (full) {
            if (st_d(L, A_MAIN_RAN_AT, &ran) < 0) return -1;
            double tm = next_pass(now, E->sched_int, ran);
            if (tm < *t) *t = tm, *t_obj = NULL;
        }
        PyObject *running = st_container(L, A_RUNNING, &PyDict_Type);
        if (running == NULL) return -1;
        if (E->time_dep && (any_heap || cursor < n || PyDict_GET_SIZE(running) || av_at < n_av ||
                            *kick < INFINITY)) {
            double tc;
            if (st_d(L, A_CALC_NEXT, &tc) < 0) return -1;
            if (tc < *t) {
                int main_dirty = st_flag(L, A_MAIN_DIRTY);
                if (main_dirty < 0) return -1;
                if (E->quiet && now < tc && tc <= until && fmod(tc, E->period) == 0 &&
                    !main_dirty && !full) {
                    return quiet_ticks(L, E, tc, *t, until) < 0 ? -1 : 2;
                }
                *t = tc > now ? tc : now;
                *t_obj = NULL;
            }
        }
    }
    return *t > until || *t == INFINITY ? 0 : 1;
}

/* Pop the heap's events of `kind` at `t`; each one's payload goes to the simulator's
 * method `meth` (a timer's only while its job is pending; -1: none). How many, or -1. */
static long long pop_due(const Life *L, PyObject *heap, double t, long long kind, int meth) {
    long long n = 0;
    PyObject *pending = st_container(L, A_PENDING, &PyDict_Type);
    if (pending == NULL) return -1;
    for (;;) {
        int due = heap_due(heap, t, kind);
        if (due <= 0) return due < 0 ? -1 : n;
        PyObject *item = heap_call(heappop_fn, heap, NULL);
        if (item == NULL) return -1;
        n++;
        PyObject *job = PyTuple_GET_ITEM(item, 3);
        int go = meth >= 0;
        if (go && meth == A_CHECK_ELIGIBLE) {
            PyObject *jid = PyObject_GetAttr(job, attr_keys[A_JOB_ID]);
            go = jid == NULL ? -1 : PyDict_Contains(pending, jid);
            Py_XDECREF(jid);
        }
        PyObject *r = go > 0 ? PyObject_CallMethodOneArg(L->sim, attr_keys[meth], job) : NULL;
        Py_DECREF(item);
        if (go < 0 || (go > 0 && r == NULL)) return -1;
        Py_XDECREF(r);
    }
}

/* _after_submissions: the main scheduler runs now, or batch_sched_delay later. */
static int after_submissions(const Life *L, const Ev *E, double now) {
    double kick_at;
    if (E->delay <= 0) return st_set_flag(L, A_MAIN_DIRTY, 1);
    if (st_d(L, A_KICK_AT, &kick_at) < 0) return -1;
    return kick_at <= now ? st_put(L, A_KICK_AT, PyFloat_FromDouble(now + E->delay)) : 0;
}

/* Step 6 of a turn: the availability steps due at `t`. How many, or -1. */
static long long av_steps(const Life *L, const Ev *E, double t) {
    long long av_at, n = 0;
    if (st_ll(L, A_AV_AT, &av_at) < 0) return -1;
    for (; av_at < PyList_GET_SIZE(E->av_t); av_at++, n++) {
        double ta;
        long long seg, units, free_units, cap;
        if (read_double(PyList_GET_ITEM(E->av_t, av_at), &ta) < 0) return -1;
        if (ta != t) break;
        PyObject *u = PyList_GET_ITEM(E->av_u, av_at);
        if (read_ll(PyList_GET_ITEM(E->av_seg, av_at), &seg) < 0 || read_ll(u, &units) < 0)
            return -1;
        if (seg < 0) {
            if (st_ll(L, A_FREE, &free_units) < 0 || st_ll(L, A_CAP, &cap) < 0 ||
                st_set_ll(L, A_FREE, free_units + units - cap) < 0 ||
                put_b(L->st, soff[A_CAP], u) < 0)
                return -1;
        } else {
            PyObject *r = PyObject_CallMethod(L->sim, "_pool_step", "LO", seg, u);
            Py_XDECREF(r);
            if (r == NULL) return -1;
        }
        if (st_set_ll(L, A_AV_AT, av_at + 1) < 0) return -1;
    }
    return n;
}

/* Step 4 of a turn: the backfill scheduler at a multiple of bf_interval (once per time);
 * it sees this second's submissions, not its job ends. Clears *events when it ran. */
static int backfill_step(const Life *L, const Ev *E, double t, int *events) {
    double ran;
    if (!E->bf || fmod(t, E->bf_int) != 0) return 0;
    if (st_d(L, A_BF_RAN_AT, &ran) < 0) return -1;
    if (ran == t) return 0;
    if (st_put(L, A_BF_RAN_AT, PyFloat_FromDouble(t)) < 0) return -1;
    int dirty = st_flag(L, A_BF_DIRTY);
    if (dirty < 0) return -1;
    if (!(dirty || *events)) return 0;
    int can = can_any_start(L, t);
    if (can < 0 || (can && backfill_pass(L, E, t) < 0) ||
        st_set_flag(L, A_BF_DIRTY, 0) < 0)
        return -1;
    *events = 0;
    return 0;
}

/* One turn at time t (steps 1-6 of _loop, then the due passes). */
static int turn(const Life *L, const Ev *E, PyObject *heap, double t, double kick) {
    int events = 0;
    long long a = arrivals_due(L, t), b;
    if (a < 0 || (b = pop_due(L, heap, t, E->k_submit, A_ARRIVE)) < 0) return -1;
    if (a + b > 0) {  /* 1. submissions: trace jobs, then injected ones */
        events = 1;
        if (after_submissions(L, E, t) < 0) return -1;
    }
    long long timers = pop_due(L, heap, t, E->k_timer, A_CHECK_ELIGIBLE);  /* 2. */
    if (timers < 0) return -1;
    long long kicks = pop_due(L, heap, t, E->k_kick, -1);  /* 3. delayed main runs */
    if (kicks < 0) return -1;
    int main = timers > 0 || kick == t || kicks > 0;
    events |= main;
    if (main && st_set_flag(L, A_MAIN_DIRTY, 1) < 0) return -1;
    if (backfill_step(L, E, t, &events) < 0) return -1;  /* 4. */
    long long ends = ends_due(L, t), steps;  /* 5. job ends */
    if (ends < 0 || (steps = av_steps(L, E, t)) < 0) return -1;  /* 6. availability */
    if (ends + steps > 0) {
        events = 1;
        if (st_set_flag(L, A_MAIN_DIRTY, 1) < 0) return -1;
    }
    if (events && st_set_flag(L, A_BF_DIRTY, 1) < 0) return -1;
    int main_dirty = st_flag(L, A_MAIN_DIRTY), full = st_flag(L, A_FULL_MAIN_DUE);
    double calc_next;
    if (main_dirty < 0 || full < 0 || st_d(L, A_CALC_NEXT, &calc_next) < 0) return -1;
    if (main_dirty || full || t >= calc_next) return due_passes(L, E, t);
    return 0;
}

/* run_loop(ctx, state, until, ev) -> None
 * Simulator._loop(until), compiled (see the top of this file). */
static PyObject *run_loop(PyObject *self, PyObject *args) {
    PyObject *ctx, *st, *ev;
    double until;
    Life L;
    Ev E;
    if (!PyArg_ParseTuple(args, "OOdO", &ctx, &st, &until, &ev) || life_parse(ctx, st, &L) < 0 ||
        ev_parse(ev, &E) < 0)
        return NULL;
    PyObject *cols = lc(&L, LC_ARRAYS);
    Py_ssize_t n = 0;  /* trace jobs */
    if (cols != Py_None) {
        if (!PyTuple_Check(cols) || PyTuple_GET_SIZE(cols) != N_TCOLS ||
            !PyList_Check(PyTuple_GET_ITEM(cols, T_SUBMIT))) {
            PyErr_SetString(PyExc_TypeError, "event loop: bad trace columns");
            return NULL;
        }
        n = PyList_GET_SIZE(PyTuple_GET_ITEM(cols, T_SUBMIT));
    }
    for (;;) {
        PyObject *heap = st_container(&L, A_HEAP, &PyList_Type), *t_obj;
        double t, kick;
        if (heap == NULL || PyErr_CheckSignals() < 0) return NULL;
        int r = next_time(&L, &E, heap, n, until, &t, &t_obj, &kick);
        if (r < 0) return NULL;
        if (r == 0) break;
        if (r == 2) continue;
        if (t_obj != NULL) Py_INCREF(t_obj);
        if (st_put(&L, A_NOW, t_obj ? t_obj : PyFloat_FromDouble(t)) < 0 ||
            turn(&L, &E, heap, t, kick) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}
