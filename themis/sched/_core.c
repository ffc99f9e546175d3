/* themis.sched._core: the compiled fair-share scheduler core (see docs/themis-sched-api.md).
 *
 * One `Core` object is one scheduler: per-job FIFO queues of chunks, the policy's share tree
 * (weights set from Python), and one of five dispatchers (fifo, lottery, sfq, tbf, gift).
 * Python drives it with the GIL held (themis.sched.Scheduler); other extensions drive it
 * without the GIL through the capsule API of core_api.h (acquire/release).  Every entry point
 * takes the core's mutex.  Decisions are those of the Python reference model
 * (tests/themis/sched_reference.py): same float operations in the same order, and the
 * lottery draws from MT19937 seeded as Python's random.Random.
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

/* ---- MT19937, seeded and drawn exactly as CPython's random.Random ------------------------ */
#define MT_N 624
#define MT_M 397
typedef struct {
    uint32_t mt[MT_N];
    int mti;
} mt_state;

static void mt_init(mt_state *s, uint32_t seed) {
    s->mt[0] = seed;
    for (int i = 1; i < MT_N; i++)
        s->mt[i] = 1812433253U * (s->mt[i - 1] ^ (s->mt[i - 1] >> 30)) + (uint32_t)i;
    s->mti = MT_N;
}

static void mt_seed(mt_state *s, uint64_t seed) {
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    size_t len = key[1] ? 2 : 1;
    mt_init(s, 19650218U);
    size_t i = 1, j = 0, k = MT_N > len ? MT_N : len;
    for (; k; k--) {
        s->mt[i] = (s->mt[i] ^ ((s->mt[i - 1] ^ (s->mt[i - 1] >> 30)) * 1664525U)) + key[j] +
                   (uint32_t)j;
        i++;
        j++;
        if (i >= MT_N) {
            s->mt[0] = s->mt[MT_N - 1];
            i = 1;
        }
        if (j >= len) j = 0;
    }
    for (k = MT_N - 1; k; k--) {
        s->mt[i] = (s->mt[i] ^ ((s->mt[i - 1] ^ (s->mt[i - 1] >> 30)) * 1566083941U)) - (uint32_t)i;
        i++;
        if (i >= MT_N) {
            s->mt[0] = s->mt[MT_N - 1];
            i = 1;
        }
    }
    s->mt[0] = 0x80000000U;
}

static uint32_t mt_next(mt_state *s) {
    static const uint32_t mag01[2] = {0x0U, 0x9908b0dfU};
    uint32_t y;
    if (s->mti >= MT_N) {
        int kk;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (s->mt[kk] & 0x80000000U) | (s->mt[kk + 1] & 0x7fffffffU);
            s->mt[kk] = s->mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1U];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (s->mt[kk] & 0x80000000U) | (s->mt[kk + 1] & 0x7fffffffU);
            s->mt[kk] = s->mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1U];
        }
        y = (s->mt[MT_N - 1] & 0x80000000U) | (s->mt[0] & 0x7fffffffU);
        s->mt[MT_N - 1] = s->mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1U];
        s->mti = 0;
    }
    y = s->mt[s->mti++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

static double mt_random(mt_state *s) {
    uint32_t a = mt_next(s) >> 5, b = mt_next(s) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* ---- a growable Fenwick tree (themis/sched/fenwick.py, operation for operation) ---------- */
typedef struct {
    double *t, *w;
    int n;
    double total;
} fen_t;

static int fen_rebuild(fen_t *f, const double *w, int len) {
    int n = 1;
    while (n < (len > 1 ? len : 1)) n *= 2;
    double *t = calloc((size_t)n + 1, sizeof(double)), *nw = calloc((size_t)n, sizeof(double));
    if (!t || !nw) {
        free(t);
        free(nw);
        return -1;
    }
    double total = 0.0;
    for (int i = 0; i < len; i++) nw[i] = w[i];
    for (int i = 0; i < n; i++) {
        t[i + 1] = nw[i];
        total += nw[i];
    }
    for (int i = 1; i <= n; i++) {
        int j = i + (i & -i);
        if (j <= n) t[j] += t[i];
    }
    free(f->t);
    free(f->w);
    f->t = t;
    f->w = nw;
    f->n = n;
    f->total = total;
    return 0;
}

static int fen_init(fen_t *f) {
    f->t = f->w = NULL;
    double z[2] = {0.0, 0.0};
    return fen_rebuild(f, z, 2);
}

static int fen_set(fen_t *f, int i, double w) {
    if (i >= f->n) {
        int n = f->n;
        while (n < i + 1) n *= 2;
        double *grown = calloc((size_t)n, sizeof(double));
        if (!grown) return -1;
        memcpy(grown, f->w, sizeof(double) * (size_t)f->n);
        int rc = fen_rebuild(f, grown, n);
        free(grown);
        if (rc) return -1;
    }
    double delta = w - f->w[i];
    if (delta == 0.0) return 0;
    f->w[i] = w;
    f->total += delta;
    for (int j = i + 1; j <= f->n; j += j & -j) f->t[j] += delta;
    return 0;
}

static int fen_find(const fen_t *f, double r) {
    const double *t = f->t, *w = f->w;
    int n = f->n, pos;
    if (t[n] <= r) {
        pos = n;
    } else {
        pos = 0;
        for (int step = n >> 1; step; step >>= 1) {
            int nxt = pos + step;
            double v = t[nxt];
            if (v <= r) {
                pos = nxt;
                r -= v;
            }
        }
    }
    if (pos >= n || w[pos] <= 0.0) {
        for (int i = (pos < n - 1 ? pos : n - 1); i >= 0; i--)
            if (w[i] > 0.0) return i;
        for (int i = 0; i < n; i++)
            if (w[i] > 0.0) return i;
    }
    return pos;
}

/* ---- the share tree (themis/sched/tree.py) ------------------------------------------------ */
typedef struct node node;
typedef struct {
    double start;
    int64_t seq;
    node *node;
} hent;

struct node {
    node *parent;
    int64_t key;
    double base, boost, weight, nboost;
    node **slots;
    int nslots, capslots, nchildren;
    int *freeslots;
    int nfree, capfree;
    int slot;
    fen_t fen;
    int nactive, on, mark;
    hent *heap; /* SFQ: active children by (start, seq) */
    int hlen, hcap;
    double vtime, start, finish;
    int32_t job; /* -1: internal */
};

static node *node_new(node *parent, int64_t key, double base, double boost) {
    node *n = calloc(1, sizeof(node));
    if (!n) return NULL;
    if (fen_init(&n->fen)) {
        free(n);
        return NULL;
    }
    n->parent = parent;
    n->key = key;
    n->base = base;
    n->boost = boost;
    n->weight = base * boost;
    n->slot = -1;
    n->job = -1;
    return n;
}

static void node_free(node *n) {
    for (int i = 0; i < n->nslots; i++)
        if (n->slots[i]) node_free(n->slots[i]);
    free(n->slots);
    free(n->freeslots);
    free(n->fen.t);
    free(n->fen.w);
    free(n->heap);
    free(n);
}

/* hent heap helpers (a binary min-heap on (start, seq)) */
static int hless(const hent *a, const hent *b) {
    return a->start < b->start || (a->start == b->start && a->seq < b->seq);
}

static void hsift_up(hent *h, int i) {
    hent x = h[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!hless(&x, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void hsift_down(hent *h, int len, int i) {
    hent x = h[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= len) break;
        if (c + 1 < len && hless(&h[c + 1], &h[c])) c++;
        if (!hless(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static int hpush(hent **h, int *len, int *cap, hent e) {
    if (*len == *cap) {
        int nc = *cap ? *cap * 2 : 4;
        hent *g = realloc(*h, sizeof(hent) * (size_t)nc);
        if (!g) return -1;
        *h = g;
        *cap = nc;
    }
    (*h)[*len] = e;
    hsift_up(*h, (*len)++);
    return 0;
}

static void hremove(hent *h, int *len, int i) {
    (*len)--;
    if (i == *len) return;
    h[i] = h[*len];
    hsift_down(h, *len, i);
    hsift_up(h, i);
}

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
    int state, retired, nlev;
    int64_t serial;
    int64_t keys[MAXLEV];
    double base[MAXLEV + 1], boost[MAXLEV + 1];
    double rate; /* TBF: this job's rate */
    ring_t q;
    uint64_t qbytes, bytes, ops, winbytes;
    int32_t inflight;
    double wait_s;
    node *leaf;
    /* TBF / GIFT bucket */
    int hasb, gnew;
    double tokens, last, brate, coupons;
    uint64_t bgen;
} job_t;

typedef struct {
    double ready;
    int64_t seq;
    uint64_t gen;
    int32_t job;
} tent;

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
    tent *theap;
    int tlen, tcap;
    /* gift */
    double gift_capacity, gift_burst_s, gift_coupon_s;
    int32_t *gactive;
    int32_t ngactive, capgactive;
    int gdirty, pay_coupons, has_last;
    double glast;
    double *gshares;
    /* Python chunks dispatched by a C thread, handed out by the next take() */
    ring_t ready;
    int nwaiters, shared; /* shared: C threads have called acquire() */
    waiter *waiters;
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

/* ---- dispatchers ---------------------------------------------------------------------------- */
static int lottery_activate(ts_core *c, int32_t h) {
    node *n = tree_leaf(c, h);
    if (!n) return -1;
    node *p = n->parent;
    while (p) {
        n->on = 1;
        if (fen_set(&p->fen, n->slot, n->weight)) return -1;
        if (++p->nactive > 1) return 0;
        n = p;
        p = p->parent;
    }
    return 0;
}

static void lottery_deactivate(ts_core *c, int32_t h) {
    node *n = c->jobs[h].leaf, *p = n->parent;
    while (p && n->on) {
        n->on = 0;
        fen_set(&p->fen, n->slot, 0.0); /* within the tree's size: cannot fail */
        if (--p->nactive > 0) return;
        n = p;
        p = p->parent;
    }
}

static int32_t lottery_pick(ts_core *c) {
    node *n = c->root;
    if (!n->nactive) return -1;
    while (n->job < 0) {
        double r = mt_random(&c->mt) * n->fen.total;
        n = n->slots[fen_find(&n->fen, r)];
    }
    return n->job;
}

static int sfq_activate(ts_core *c, int32_t h) {
    node *n = tree_leaf(c, h);
    if (!n) return -1;
    node *p = n->parent;
    while (p) {
        n->start = p->vtime >= n->finish ? p->vtime : n->finish;
        hent e = {n->start, c->hseq++, n};
        if (hpush(&p->heap, &p->hlen, &p->hcap, e)) return -1;
        if (p->hlen > 1) return 0;
        n = p;
        p = p->parent;
    }
    return 0;
}

static void sfq_deactivate(ts_core *c, int32_t h) {
    node *n = c->jobs[h].leaf, *p = n->parent;
    while (p) {
        int i;
        for (i = 0; i < p->hlen; i++)
            if (p->heap[i].node == n) break;
        if (i == p->hlen) return;
        hremove(p->heap, &p->hlen, i);
        if (p->hlen) return;
        n = p;
        p = p->parent;
    }
}

static int32_t sfq_pick(ts_core *c) {
    node *n = c->root;
    if (!n->hlen) return -1;
    while (n->job < 0) n = n->heap[0].node;
    return n->job;
}

static int sfq_served(ts_core *c, int32_t h, double nbytes, int active) {
    node *n = c->jobs[h].leaf, *p = n->parent;
    while (p) {
        hremove(p->heap, &p->hlen, 0); /* n is on top: pick() just descended through it */
        p->vtime = n->start;
        n->finish = n->start + nbytes / n->weight;
        if (active) {
            n->start = n->finish;
            hent e = {n->start, c->hseq++, n};
            if (hpush(&p->heap, &p->hlen, &p->hcap, e)) return -1;
        }
        active = p->hlen > 0;
        n = p;
        p = p->parent;
    }
    return 0;
}

/* TBF */
static inline double minf(double a, double b) { return b < a ? b : a; } /* Python's min(a, b) */
static inline double maxf(double a, double b) { return b > a ? b : a; } /* Python's max(a, b) */

static void tbf_refill(ts_core *c, job_t *j, double now) {
    if (now > j->last) {
        j->tokens = minf(c->tbf_burst, j->tokens + j->brate * (now - j->last));
        j->last = now;
    }
}

static int tless(const tent *a, const tent *b) {
    return a->ready < b->ready || (a->ready == b->ready && a->seq < b->seq);
}

static int tpush(ts_core *c, tent e) {
    if (c->tlen == c->tcap) {
        int nc = c->tcap ? c->tcap * 2 : 16;
        tent *g = realloc(c->theap, sizeof(tent) * (size_t)nc);
        if (!g) return -1;
        c->theap = g;
        c->tcap = nc;
    }
    int i = c->tlen++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!tless(&e, &c->theap[p])) break;
        c->theap[i] = c->theap[p];
        i = p;
    }
    c->theap[i] = e;
    return 0;
}

static void tpop(ts_core *c) {
    tent *h = c->theap;
    int len = --c->tlen;
    if (!len) return;
    tent x = h[len];
    int i = 0;
    for (;;) {
        int ch = 2 * i + 1;
        if (ch >= len) break;
        if (ch + 1 < len && tless(&h[ch + 1], &h[ch])) ch++;
        if (!tless(&h[ch], &x)) break;
        h[i] = h[ch];
        i = ch;
    }
    h[i] = x;
}

static double next_nbytes(ts_core *c, job_t *j) { return (double)c->chunks[ring_at(&j->q, 0)].nbytes; }

static int tbf_push(ts_core *c, int32_t h, double now) {
    job_t *j = &c->jobs[h];
    double need = minf(next_nbytes(c, j), c->tbf_burst);
    double ready = j->tokens + EPS >= need ? now : now + (need - j->tokens) / j->brate;
    tent e = {ready, c->hseq++, j->bgen, h};
    return tpush(c, e);
}

static int tbf_activate(ts_core *c, int32_t h, double now) {
    job_t *j = &c->jobs[h];
    if (!j->hasb) {
        j->hasb = 1;
        j->tokens = c->tbf_burst;
        j->last = now;
        j->brate = j->rate;
    }
    tbf_refill(c, j, now);
    j->bgen++;
    return tbf_push(c, h, now);
}

static tent *tbf_top(ts_core *c) {
    while (c->tlen) {
        tent *t = &c->theap[0];
        job_t *j = &c->jobs[t->job];
        if (j->state == J_LIVE && j->hasb && t->gen == j->bgen) return t;
        tpop(c);
    }
    return NULL;
}

static int32_t tbf_pick(ts_core *c, double now) {
    tent *t = tbf_top(c);
    if (!t || t->ready > now + SLACK) return -1;
    int32_t h = t->job;
    tpop(c);
    return h;
}

static int tbf_served(ts_core *c, int32_t h, double nbytes, int active, double now) {
    job_t *j = &c->jobs[h];
    tbf_refill(c, j, now);
    j->tokens -= nbytes;
    j->bgen++;
    return active ? tbf_push(c, h, now) : 0;
}

/* GIFT: the policy's shares over the active jobs (Policy.tree_shares, same float order) */
static int split_shares(ts_core *c, int32_t *js, int n, int depth, double share) {
    if (depth == c->nlev) {
        double total = 0.0;
        for (int i = 0; i < n; i++) total += c->jobs[js[i]].base[depth];
        for (int i = 0; i < n; i++) c->gshares[js[i]] = share * c->jobs[js[i]].base[depth] / total;
        return 0;
    }
    /* group by key in order of first appearance (a stable counting sort) */
    int32_t *grp = malloc(sizeof(int32_t) * (size_t)n * 3);
    if (!grp) return -1;
    int32_t *first = grp + n, *sorted = grp + 2 * n;
    int ng = 0;
    for (int i = 0; i < n; i++) {
        int64_t k = c->jobs[js[i]].keys[depth];
        int g;
        for (g = 0; g < ng; g++)
            if (c->jobs[js[first[g]]].keys[depth] == k) break;
        if (g == ng) first[ng++] = i;
        grp[i] = g;
    }
    double total = 0.0;
    for (int g = 0; g < ng; g++) total += c->jobs[js[first[g]]].base[depth];
    int rc = 0;
    for (int g = 0; g < ng && !rc; g++) {
        int m = 0;
        for (int i = first[g]; i < n; i++)
            if (grp[i] == g) sorted[m++] = js[i];
        double sub = share * c->jobs[js[first[g]]].base[depth] / total;
        rc = split_shares(c, sorted, m, depth + 1, sub);
    }
    free(grp);
    return rc;
}

static int gift_advance(ts_core *c, double now) {
    double last = c->has_last ? c->glast : now;
    double dt = maxf(0.0, now - last);
    c->glast = maxf(now, last);
    c->has_last = 1;
    if (dt != 0.0) {
        for (int i = 0; i < c->ngactive; i++) {
            job_t *j = &c->jobs[c->gactive[i]];
            j->tokens += j->brate * dt;
            double cap = j->brate * c->gift_burst_s;
            if (j->tokens > cap) {
                j->coupons = minf(j->brate * c->gift_coupon_s, j->coupons + j->tokens - cap);
                j->tokens = cap;
            }
        }
    }
    if (c->gdirty) {
        c->gdirty = 0;
        if (c->ngactive && split_shares(c, c->gactive, c->ngactive, 0, 1.0)) return -1;
        for (int i = 0; i < c->ngactive; i++) {
            job_t *j = &c->jobs[c->gactive[i]];
            j->brate = c->gshares[c->gactive[i]] * c->gift_capacity;
            double cap = j->brate * c->gift_burst_s;
            if (j->gnew) {
                j->gnew = 0;
                j->tokens = cap;
            } else if (j->tokens > cap) {
                j->tokens = cap;
            }
        }
    }
    return 0;
}

static double gift_need(ts_core *c, job_t *j) {
    return minf(next_nbytes(c, j), j->brate * c->gift_burst_s);
}

static int gift_remove(ts_core *c, int32_t h) {
    for (int i = 0; i < c->ngactive; i++)
        if (c->gactive[i] == h) {
            memmove(c->gactive + i, c->gactive + i + 1, sizeof(int32_t) * (size_t)(c->ngactive - i - 1));
            c->ngactive--;
            return 1;
        }
    return 0;
}

static int gift_activate(ts_core *c, int32_t h, double now) {
    if (gift_advance(c, now)) return -1;
    job_t *j = &c->jobs[h];
    if (!j->hasb) {
        j->hasb = 1;
        j->gnew = 1;
        j->tokens = j->coupons = j->brate = 0.0;
        j->last = now;
    }
    for (int i = 0; i < c->ngactive; i++)
        if (c->gactive[i] == h) { /* a dict update keeps the job's place */
            c->gdirty = 1;
            return 0;
        }
    if (c->ngactive == c->capgactive) {
        int nc = c->capgactive ? c->capgactive * 2 : 16;
        int32_t *g = realloc(c->gactive, sizeof(int32_t) * (size_t)nc);
        if (!g) return -1;
        c->gactive = g;
        c->capgactive = nc;
    }
    c->gactive[c->ngactive++] = h;
    c->gdirty = 1;
    return 0;
}

static int gift_deactivate(ts_core *c, int32_t h, double now) {
    if (gift_advance(c, now)) return -1;
    if (gift_remove(c, h)) c->gdirty = 1;
    return 0;
}

static int32_t gift_pick(ts_core *c, double now, int *err) {
    if (gift_advance(c, now)) {
        *err = 1;
        return -1;
    }
    int32_t best = -1;
    double best_v = -1.0;
    for (int i = 0; i < c->ngactive; i++) {
        job_t *j = &c->jobs[c->gactive[i]];
        if (j->brate <= 0) continue;
        double need = gift_need(c, j);
        if (j->tokens + j->brate * SLACK + EPS >= need) {
            double v = (j->tokens - need) / j->brate;
            if (v > best_v) {
                best = c->gactive[i];
                best_v = v;
            }
        }
    }
    if (best >= 0) {
        c->pay_coupons = 0;
        return best;
    }
    for (int i = 0; i < c->ngactive; i++) {
        job_t *j = &c->jobs[c->gactive[i]];
        if (j->coupons + EPS >= next_nbytes(c, j) && j->coupons > best_v) {
            best = c->gactive[i];
            best_v = j->coupons;
        }
    }
    c->pay_coupons = best >= 0;
    return best;
}

static double gift_wakeup(ts_core *c, double now) {
    gift_advance(c, now);
    double best = NAN;
    for (int i = 0; i < c->ngactive; i++) {
        job_t *j = &c->jobs[c->gactive[i]];
        if (j->brate <= 0) continue;
        double t = now + maxf(0.0, gift_need(c, j) - j->tokens) / j->brate;
        if (isnan(best) || t < best) best = t;
    }
    return best;
}

/* -- the dispatcher interface -- */
static int disp_has_state(ts_core *c, job_t *j) {
    switch (c->kind) {
    case D_LOTTERY:
    case D_SFQ:
        return j->leaf != NULL;
    case D_TBF:
    case D_GIFT:
        return j->hasb;
    default:
        return 0;
    }
}

static int disp_activate(ts_core *c, int32_t h, double now) {
    switch (c->kind) {
    case D_LOTTERY:
        return lottery_activate(c, h);
    case D_SFQ:
        return sfq_activate(c, h);
    case D_TBF:
        return tbf_activate(c, h, now);
    case D_GIFT:
        return gift_activate(c, h, now);
    default:
        return 0;
    }
}

static int disp_deactivate(ts_core *c, int32_t h, double now) {
    switch (c->kind) {
    case D_LOTTERY:
        lottery_deactivate(c, h);
        return 0;
    case D_SFQ:
        sfq_deactivate(c, h);
        return 0;
    case D_TBF:
        c->jobs[h].bgen++;
        return 0;
    case D_GIFT:
        return gift_deactivate(c, h, now);
    default:
        return 0;
    }
}

static int32_t disp_pick(ts_core *c, double now, int *err) {
    switch (c->kind) {
    case D_LOTTERY:
        return lottery_pick(c);
    case D_SFQ:
        return sfq_pick(c);
    case D_TBF:
        return tbf_pick(c, now);
    case D_GIFT:
        return gift_pick(c, now, err);
    default:
        while (c->order.len) {
            int64_t e = ring_pop(&c->order);
            int64_t id = e >> 24;
            if (c->chunks[id].state == C_QUEUED && (c->chunks[id].gen & 0xFFFFFF) == (uint64_t)(e & 0xFFFFFF))
                return c->chunks[id].job;
        }
        return -1;
    }
}

static int disp_served(ts_core *c, int32_t h, double nbytes, int active, double now) {
    switch (c->kind) {
    case D_LOTTERY:
        if (!active) lottery_deactivate(c, h);
        return 0;
    case D_SFQ:
        return sfq_served(c, h, nbytes, active);
    case D_TBF:
        return tbf_served(c, h, nbytes, active, now);
    case D_GIFT: {
        job_t *j = &c->jobs[h];
        if (c->pay_coupons)
            j->coupons -= nbytes;
        else
            j->tokens -= nbytes;
        return active ? 0 : gift_deactivate(c, h, now);
    }
    default:
        return 0;
    }
}

static void disp_forget(ts_core *c, int32_t h) {
    job_t *j = &c->jobs[h];
    if (j->leaf) {
        tree_remove(j->leaf);
        j->leaf = NULL;
    }
    if (c->kind == D_GIFT) gift_remove(c, h);
    j->hasb = 0;
    j->bgen++;
}

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

/* Dispatch everything that may run now for the C waiters; Python chunks go to `ready`.  When a
 * throttling dispatcher holds work back, one waiter is woken to sleep until its wake-up time. */
static int pump(ts_core *c, double now) {
    while (c->inflight < c->max_inflight && c->queued) {
        int64_t id = dispatch_one(c, now);
        if (id == -1) {
            if (c->waiters && (c->kind == D_TBF || c->kind == D_GIFT)) pthread_cond_signal(&c->waiters->cv);
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
    if (c->kind == D_TBF) {
        tent *t = tbf_top(c);
        return t ? maxf(t->ready, now) : NAN;
    }
    if (c->kind == D_GIFT) return gift_wakeup(c, now);
    return NAN;
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
    if (!inner) return NULL;
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
    while (!w.ready && rc >= 0) {
        double wake = disp_wakeup(c, mono());
        if (isnan(wake)) {
            pthread_cond_wait(&w.cv, &c->mu);
        } else {
            struct timespec ts;
            ts.tv_sec = (time_t)wake;
            ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
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
    c->tlen = 0;
    c->ngactive = 0;
    c->gdirty = c->pay_coupons = c->has_last = 0;
    c->glast = 0.0;
    c->hseq = 0;
    mt_seed(&c->mt, c->seed);
    for (int32_t h = 0; h < c->njobs; h++) {
        c->jobs[h].leaf = NULL;
        c->jobs[h].hasb = 0;
        c->jobs[h].bgen++;
    }
}

static int parse_config(ts_core *c, PyObject *args) {
    int kind, nlev;
    unsigned long long seed;
    double tr, tb, gc, gb, gcs;
    if (!PyArg_ParseTuple(args, "iiKddddd", &kind, &nlev, &seed, &tr, &tb, &gc, &gb, &gcs)) return -1;
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
    for (int32_t h = 0; h < c->njobs; h++) free(c->jobs[h].q.ids);
    if (c->root) {
        node_free(c->root);
        pthread_mutex_destroy(&c->mu);
    }
    free(c->chunks);
    free(c->jobs);
    free(c->freejobs);
    free(c->dead);
    free(c->order.ids);
    free(c->theap);
    free(c->gactive);
    free(c->gshares);
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
static int set_job_desc(ts_core *c, int32_t h, PyObject *keys, PyObject *bases, PyObject *boosts, double rate) {
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
    return 0;
}

static PyObject *Core_add_job(CoreObject *self, PyObject *args) {
    ts_core *c = &self->core;
    PyObject *keys, *bases, *boosts;
    double rate;
    if (!PyArg_ParseTuple(args, "OOOd", &keys, &bases, &boosts, &rate)) return NULL;
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
    memset(j, 0, sizeof(job_t));
    j->q = q;
    j->q.len = j->q.head = 0;
    j->bgen = bgen;
    j->serial = c->serial++;
    j->state = J_LIVE;
    if (set_job_desc(c, h, keys, bases, boosts, rate)) {
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
    PyObject *keys, *bases, *boosts;
    double rate;
    if (!PyArg_ParseTuple(args, "iOOOd", &h, &keys, &bases, &boosts, &rate)) return NULL;
    LOCK(c);
    int rc = check_job(c, h) || set_job_desc(c, h, keys, bases, boosts, rate);
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
            Py_DECREF(ch->obj);
            chunk_free(c, id);
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
    LOCK(c);
    PyObject *out = PyList_New(c->ndead);
    if (out) {
        for (int32_t i = 0; i < c->ndead; i++) {
            int32_t h = c->dead[i];
            c->jobs[h].state = J_FREE;
            c->freejobs[c->nfreejobs++] = h;
            PyList_SET_ITEM(out, i, PyLong_FromLong(h));
        }
        c->ndead = 0;
    }
    UNLOCK(c);
    return out;
}

/* set_boosts([(job, boosts), ...]): new per-level boosts of these jobs; existing tree nodes
 * take them (a changed active node's parent rebuilds its Fenwick tree, as the reference) */
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

static PyObject *Core_set_boosts(CoreObject *self, PyObject *arg) {
    ts_core *c = &self->core;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "a list of (job, boosts)");
        return NULL;
    }
    LOCK(c);
    int fail = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(arg) && !fail; i++) {
        int h;
        PyObject *boosts;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(arg, i), "iO", &h, &boosts) || check_job(c, h)) {
            fail = 1;
            break;
        }
        fail = parse_doubles(boosts, c->jobs[h].boost, c->nlev + 1, "boosts");
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
    UNLOCK(c);
    if (fail) return NULL;
    Py_RETURN_NONE;
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
    LOCK(c);
    PyObject *jobs = PyList_New(0);
    uint64_t bytes = c->bytes, ops = c->ops;
    for (int32_t h = 0; jobs && h < c->njobs; h++) {
        job_t *j = &c->jobs[h];
        if (j->state == J_FREE) continue;
        bytes += j->state == J_LIVE ? j->bytes : 0;
        ops += j->state == J_LIVE ? j->ops : 0;
        if (j->state != J_LIVE) continue;
        PyObject *t = Py_BuildValue("(iKKLKidK)", h, (unsigned long long)j->bytes, (unsigned long long)j->ops,
                                    (long long)j->q.len, (unsigned long long)j->qbytes, j->inflight,
                                    j->wait_s, (unsigned long long)j->winbytes);
        if (!t || PyList_Append(jobs, t)) {
            Py_XDECREF(t);
            Py_CLEAR(jobs);
        } else {
            Py_DECREF(t);
        }
    }
    PyObject *out = jobs ? Py_BuildValue("(LLKKKN)", (long long)c->queued, (long long)c->inflight,
                                         (unsigned long long)bytes, (unsigned long long)ops,
                                         (unsigned long long)c->wtotal, jobs)
                         : NULL;
    UNLOCK(c);
    return out;
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
    {"set_boosts", (PyCFunction)Core_set_boosts, METH_O, "set_boosts([(job, boosts), ...])"},
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
    if (PyType_Ready(&CoreType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    state_str = PyUnicode_InternFromString("state");
    dispatched_obj = PyLong_FromLong(1); /* themis.sched.items.DISPATCHED */
    Py_INCREF(&CoreType);
    if (!state_str || !dispatched_obj || PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0 ||
        PyModule_AddObject(m, "_C_API", PyCapsule_New(&the_api, THEMIS_CORE_CAPSULE, NULL)) < 0 ||
        PyModule_AddIntConstant(m, "API_VERSION", THEMIS_CORE_API_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
