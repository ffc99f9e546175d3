/* A stand-in for themis/sched/core_api.h until the compiled scheduler core is merged (never
 * shipped with it): the same table, answered by a first-come gate of the scheduler's
 * max_inflight slots. Included by _datapath.c only when core_api.h is absent. */
#ifndef THEMIS_CORE_API_H
#define THEMIS_CORE_API_H

#include <Python.h>
#include <pthread.h>
#include <stdint.h>

#define THEMIS_CORE_API_VERSION 1
#define THEMIS_CORE_CAPSULE "themis.sched._core._C_API"

typedef struct ts_core ts_core;

typedef struct {
    int version;
    ts_core *(*from_object)(PyObject *sched);
    int64_t (*acquire)(ts_core *core, int32_t job, uint64_t nbytes);
    void (*release)(ts_core *core, int64_t ticket);
} themis_core_api;

struct ts_core {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    long free;
};

static ts_core standin_core = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static ts_core *standin_from_object(PyObject *sched)
{
    PyObject *n = PyObject_GetAttrString(sched, "max_inflight");
    if (!n)
        return NULL;
    long slots = PyLong_AsLong(n);
    Py_DECREF(n);
    if (slots < 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "max_inflight must be >= 1");
        return NULL;
    }
    standin_core.free = slots;
    return &standin_core;
}

static int64_t standin_acquire(ts_core *c, int32_t job, uint64_t nbytes)
{
    (void)job;
    (void)nbytes;
    pthread_mutex_lock(&c->lock);
    while (c->free <= 0)
        pthread_cond_wait(&c->freed, &c->lock);
    c->free--;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

static void standin_release(ts_core *c, int64_t ticket)
{
    (void)ticket;
    pthread_mutex_lock(&c->lock);
    c->free++;
    pthread_cond_signal(&c->freed);
    pthread_mutex_unlock(&c->lock);
}

static const themis_core_api standin_api = {THEMIS_CORE_API_VERSION, standin_from_object,
                                            standin_acquire, standin_release};
#define THEMIS_CORE_STANDIN 1
#endif
