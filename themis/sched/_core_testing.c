/* themis.sched._core: test helpers (pthreads on acquire/release; the
 * MT19937 draws).
 * Included by _core.c: one translation unit, so the parts share static functions. */

/* ---- a test helper: N pthreads hammering acquire/release without the GIL -------------------- */
typedef struct {
    ts_core *core;
    int32_t job;
    uint64_t nbytes;
    double hold_s;
    volatile int *stop;
    int64_t count;
    int64_t err;
} stress_arg;

static void *stress_thread(void *p) {
    stress_arg *a = p;
    while (!*a->stop) {
        int64_t t = api_acquire(a->core, a->job, a->nbytes);
        if (t < 0) {
            a->err = t;
            break;
        }
        if (a->hold_s > 0) {
            struct timespec ts = {0, (long)(a->hold_s * 1e9)};
            nanosleep(&ts, NULL);
        }
        a->count++;
        api_release(a->core, t);
    }
    return NULL;
}

static PyObject *mod_stress(PyObject *Py_UNUSED(m), PyObject *args) {
    PyObject *sched, *spec;
    double seconds, hold_s;
    if (!PyArg_ParseTuple(args, "OO!dd", &sched, &PyList_Type, &spec, &seconds, &hold_s)) return NULL;
    ts_core *c = api_from_object(sched);
    if (!c) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(spec);
    stress_arg *a = calloc((size_t)(n ? n : 1), sizeof(stress_arg));
    pthread_t *tid = calloc((size_t)(n ? n : 1), sizeof(pthread_t));
    volatile int stop = 0;
    if (!a || !tid) {
        free(a);
        free(tid);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int job;
        unsigned long long nbytes;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(spec, i), "iK", &job, &nbytes)) {
            free(a);
            free(tid);
            return NULL;
        }
        a[i] = (stress_arg){c, job, nbytes, hold_s, &stop, 0, 0};
    }
    Py_ssize_t started = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; started < n; started++)
        if (pthread_create(&tid[started], NULL, stress_thread, &a[started])) break;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    stop = 1;
    for (Py_ssize_t i = 0; i < started; i++) pthread_join(tid[i], NULL);
    Py_END_ALLOW_THREADS
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++)
        PyList_SET_ITEM(out, i, Py_BuildValue("(LL)", (long long)a[i].count, (long long)a[i].err));
    free(a);
    free(tid);
    if (started < n) {
        Py_XDECREF(out);
        PyErr_SetString(PyExc_OSError, "pthread_create failed");
        return NULL;
    }
    return out;
}

/* ---- a test helper: the MT19937 draws, to check them against random.Random -------------- */
static PyObject *mod_mt_draws(PyObject *Py_UNUSED(m), PyObject *args) {
    unsigned long long seed;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Kn", &seed, &n)) return NULL;
    mt_state s;
    mt_seed(&s, seed);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) PyList_SET_ITEM(out, i, PyFloat_FromDouble(mt_random(&s)));
    return out;
}

static PyMethodDef Core_methods[] = {
    {"add_job", (PyCFunction)Core_add_job, METH_VARARGS, "add_job(keys, bases, boosts, rate) -> handle"},
    {"set_job", (PyCFunction)Core_set_job, METH_VARARGS, "set_job(handle, keys, bases, boosts, rate)"},
    {"submit", (PyCFunction)(void (*)(void))Core_submit, METH_FASTCALL, "submit(job, nbytes, chunk, now) -> bool"},
    {"take", (PyCFunction)(void (*)(void))Core_take, METH_FASTCALL, "take(limit, now) -> list"},
    {"done", (PyCFunction)(void (*)(void))Core_done, METH_FASTCALL, "done(job, nbytes)"},
    {"cancel", (PyCFunction)Core_cancel, METH_VARARGS, "cancel(job, chunks, now) -> int"},
    {"wakeup", (PyCFunction)Core_wakeup, METH_O, "wakeup(now) -> float | None"},
    {"forget", (PyCFunction)Core_forget, METH_O, "forget(job)"},
    {"reap", (PyCFunction)Core_reap, METH_NOARGS, "reap() -> handles of dropped jobs, now free"},
    {"set_boosts", (PyCFunction)Core_set_boosts, METH_O, "set_boosts({path: boosts}) -> missing job handles"},
    {"set_rates", (PyCFunction)Core_set_rates, METH_VARARGS, "set_rates([(job, rate)], now): rate caps"},
    {"take_held", (PyCFunction)Core_take_held, METH_NOARGS, "take_held() -> jobs held by their cap since"},
    {"configure", (PyCFunction)Core_configure, METH_O, "configure(config)"},
    {"reload", (PyCFunction)Core_reload, METH_O, "reload(now)"},
    {"stats", (PyCFunction)Core_stats, METH_NOARGS, "stats() -> tuple"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Core_getset[] = {
    {"queued", (getter)Core_get_queued, NULL, "chunks queued", NULL},
    {"inflight", (getter)Core_get_inflight, NULL, "chunks dispatched, not done", NULL},
    {"shared", (getter)Core_get_shared, NULL, "C threads have called acquire()", NULL},
    {"max_inflight", (getter)Core_get_max_inflight, (setter)Core_set_max_inflight, "dispatch limit", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "themis.sched._core.Core",
    .tp_basicsize = sizeof(CoreObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One compiled scheduler (driven by themis.sched.Scheduler).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_getset = Core_getset,
};
