/* themis.sched._core: building blocks: the lottery's RNG, Fenwick trees,
 * share-tree nodes and their heaps.
 * Included by _core.c: one translation unit, so the parts share static functions. */

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
    int64_t hlen, hcap;
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

/* DEFINE_HEAP(NAME, TYPE, LESS): a binary min-heap over a growable TYPE array ordered by
 * LESS (a strict total order, so any heap pops the same sequence): NAME_push(&array, &len,
 * &cap, item) -> 0 or -1 (ENOMEM), NAME_remove(array, &len, index) (index 0: the top). */
#define DEFINE_HEAP(NAME, TYPE, LESS)                                                    \
    static void NAME##_up(TYPE *h, int64_t i) {                                         \
        TYPE x = h[i];                                                                  \
        while (i > 0) {                                                                 \
            int64_t p = (i - 1) / 2;                                                    \
            if (!LESS(&x, &h[p])) break;                                                \
            h[i] = h[p];                                                                \
            i = p;                                                                      \
        }                                                                               \
        h[i] = x;                                                                       \
    }                                                                                   \
    static void NAME##_down(TYPE *h, int64_t len, int64_t i) {                          \
        TYPE x = h[i];                                                                  \
        for (;;) {                                                                      \
            int64_t c = 2 * i + 1;                                                      \
            if (c >= len) break;                                                        \
            if (c + 1 < len && LESS(&h[c + 1], &h[c])) c++;                             \
            if (!LESS(&h[c], &x)) break;                                                \
            h[i] = h[c];                                                                \
            i = c;                                                                      \
        }                                                                               \
        h[i] = x;                                                                       \
    }                                                                                   \
    static int NAME##_push(TYPE **h, int64_t *len, int64_t *cap, TYPE x) {              \
        if (*len == *cap) {                                                             \
            int64_t nc = *cap ? *cap * 2 : 16;                                          \
            TYPE *g = realloc(*h, sizeof(TYPE) * (size_t)nc);                           \
            if (!g) return -1;                                                          \
            *h = g;                                                                     \
            *cap = nc;                                                                  \
        }                                                                               \
        (*h)[*len] = x;                                                                 \
        NAME##_up(*h, (*len)++);                                                        \
        return 0;                                                                       \
    }                                                                                   \
    static void NAME##_remove(TYPE *h, int64_t *len, int64_t i) {                       \
        if (i == --*len) return;                                                        \
        h[i] = h[*len];                                                                 \
        NAME##_down(h, *len, i);                                                        \
        NAME##_up(h, i);                                                                \
    }

/* SFQ: a node's active children by (start, seq) */
static int hless(const hent *a, const hent *b) {
    return a->start < b->start || (a->start == b->start && a->seq < b->seq);
}
DEFINE_HEAP(hheap, hent, hless)
