/* themis.sched._core: the dispatchers (fifo, lottery, SFQ, TBF, GIFT) and the
 * rate caps around lottery/SFQ.
 * Included by _core.c: one translation unit, so the parts share static functions. */

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
        if (hheap_push(&p->heap, &p->hlen, &p->hcap, e)) return -1;
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
        hheap_remove(p->heap, &p->hlen, i);
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
        hheap_remove(p->heap, &p->hlen, 0); /* n is on top: pick() just descended through it */
        p->vtime = n->start;
        n->finish = n->start + nbytes / n->weight;
        if (active) {
            n->start = n->finish;
            hent e = {n->start, c->hseq++, n};
            if (hheap_push(&p->heap, &p->hlen, &p->hcap, e)) return -1;
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

DEFINE_HEAP(theap, tent, tless)

static int tpush(theap_t *q, tent e) { return theap_push(&q->e, &q->len, &q->cap, e); }

static void tpop(theap_t *q) { theap_remove(q->e, &q->len, 0); }

static double next_nbytes(ts_core *c, job_t *j) { return (double)c->chunks[ring_at(&j->q, 0)].nbytes; }

static int tbf_push(ts_core *c, int32_t h, double now) {
    job_t *j = &c->jobs[h];
    double need = minf(next_nbytes(c, j), c->tbf_burst);
    double ready = j->tokens + EPS >= need ? now : now + (need - j->tokens) / j->brate;
    tent e = {ready, c->hseq++, j->bgen, h};
    return tpush(&c->theap, e);
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
    while (c->theap.len) {
        tent *t = &c->theap.e[0];
        job_t *j = &c->jobs[t->job];
        if (j->state == J_LIVE && j->hasb && t->gen == j->bgen) return t;
        tpop(&c->theap);
    }
    return NULL;
}

static int32_t tbf_pick(ts_core *c, double now) {
    tent *t = tbf_top(c);
    if (!t || t->ready > now + SLACK) return -1;
    int32_t h = t->job;
    tpop(&c->theap);
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

/* Whether gshares already holds the split over the active jobs as they are now: the same
 * jobs in the same order as at the last split, no key or base changed since (a job that
 * goes idle and comes back between its requests makes the set change and change back). */
static int gift_split_current(ts_core *c) {
    return c->ngsplit == c->ngactive &&
           memcmp(c->gsplit, c->gactive, sizeof(int32_t) * (size_t)c->ngactive) == 0;
}

static int gift_keep_split(ts_core *c) {
    if (c->ngactive > c->capgsplit) {
        int32_t *g = realloc(c->gsplit, sizeof(int32_t) * (size_t)c->capgactive);
        if (!g) return -1;
        c->gsplit = g;
        c->capgsplit = c->capgactive;
    }
    if (c->ngactive) memcpy(c->gsplit, c->gactive, sizeof(int32_t) * (size_t)c->ngactive);
    c->ngsplit = c->ngactive;
    return 0;
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
        if (c->ngactive && !gift_split_current(c)) {
            c->ngsplit = -1; /* until the split is whole */
            if (split_shares(c, c->gactive, c->ngactive, 0, 1.0) || gift_keep_split(c)) return -1;
        }
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

static int inner_activate(ts_core *c, int32_t h, double now) {
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

static int inner_deactivate(ts_core *c, int32_t h, double now) {
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

static int32_t inner_pick(ts_core *c, double now, int *err) {
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

static int inner_served(ts_core *c, int32_t h, double nbytes, int active, double now) {
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

static double inner_wakeup(ts_core *c, double now) {
    if (c->kind == D_TBF) {
        tent *t = tbf_top(c);
        return t ? maxf(t->ready, now) : NAN;
    }
    if (c->kind == D_GIFT) return gift_wakeup(c, now);
    return NAN;
}

#define RELEASE_AT 0.25

/* Rate caps (themis/sched/ratecap.py): a capped job pays for each chunk from a token bucket
 * and leaves the inner lottery/SFQ dispatcher while its tokens are below zero. */
static job_t *cap_of(ts_core *c, int32_t h, double now) {
    job_t *j = &c->jobs[h];
    if (!(j->crate > 0)) return NULL;
    if (!j->ccap) {
        j->ccap = 1;
        j->ctokens = j->crate * c->cap_burst_s;
        j->clast = now;
        j->cheld = 0;
        j->corder = c->corder++;
    }
    return j;
}

static void cap_refill(ts_core *c, job_t *j, double now) {
    if (now > j->clast) {
        j->ctokens = minf(j->crate * c->cap_burst_s, j->ctokens + j->crate * (now - j->clast));
        j->clast = now;
    }
}

static int cap_hold(ts_core *c, int32_t h) {
    job_t *j = &c->jobs[h];
    j->cheld = j->cheld_since = 1;
    j->cgen++;
    /* released when its tokens are back to RELEASE_AT of the bucket (ratecap.py), so that a
     * capped job's chunks go out in batches, not one wake-up per chunk */
    tent e = {j->clast + (c->cap_burst_s * RELEASE_AT * j->crate - j->ctokens) / j->crate, c->cseq++, j->cgen, h};
    return tpush(&c->cheap, e);
}

static int cap_release(ts_core *c, int32_t h, double now) {
    job_t *j = &c->jobs[h];
    j->cheld = 0;
    j->cgen++;
    return j->q.len ? inner_activate(c, h, now) : 0;
}

static int disp_activate(ts_core *c, int32_t h, double now) {
    if (c->capped) {
        job_t *j = cap_of(c, h, now);
        if (j) {
            cap_refill(c, j, now);
            if (j->ctokens < 0) return cap_hold(c, h);
        }
    }
    return inner_activate(c, h, now);
}

static int disp_deactivate(ts_core *c, int32_t h, double now) {
    job_t *j = &c->jobs[h];
    if (c->capped && j->ccap && j->cheld) {
        j->cheld = 0;
        j->cgen++;
        return 0;
    }
    return inner_deactivate(c, h, now);
}

static int32_t disp_pick(ts_core *c, double now, int *err) {
    while (c->capped && c->cheap.len && c->cheap.e[0].ready <= now) {
        tent t = c->cheap.e[0];
        tpop(&c->cheap);
        job_t *j = &c->jobs[t.job];
        if (j->state == J_LIVE && j->ccap && t.gen == j->cgen && j->cheld) {
            cap_refill(c, j, now);
            if (cap_release(c, t.job, now)) {
                *err = 1;
                return -1;
            }
        }
    }
    return inner_pick(c, now, err);
}

static int disp_served(ts_core *c, int32_t h, double nbytes, int active, double now) {
    if (inner_served(c, h, nbytes, active, now)) return -1;
    job_t *j = c->capped ? cap_of(c, h, now) : NULL;
    if (!j) return 0;
    cap_refill(c, j, now);
    j->ctokens -= nbytes;
    if (active && j->ctokens < 0) {
        if (inner_deactivate(c, h, now)) return -1;
        return cap_hold(c, h);
    }
    return 0;
}

static double cap_wakeup(ts_core *c, double now) {
    while (c->cheap.len) {
        tent *t = &c->cheap.e[0];
        job_t *j = &c->jobs[t->job];
        if (j->state == J_LIVE && j->ccap && t->gen == j->cgen && j->cheld) return maxf(t->ready, now);
        tpop(&c->cheap);
    }
    return inner_wakeup(c, now);
}

static void disp_forget(ts_core *c, int32_t h) {
    job_t *j = &c->jobs[h];
    j->ccap = j->cheld = j->cheld_since = 0;
    j->cgen++;
    if (j->leaf) {
        tree_remove(j->leaf);
        j->leaf = NULL;
    }
    if (c->kind == D_GIFT) gift_remove(c, h);
    j->hasb = 0;
    j->bgen++;
}
