/* The compiled data path of the Themis mount: FUSE read, write, flush, fsync and fallocate of
 * open files, served by C threads without the GIL; pyfuse3 serves everything else.
 *
 * install() takes the session's /dev/fuse descriptor for this module and gives libfuse, in its
 * place (same descriptor number), one end of a SOCK_SEQPACKET socket pair. Reader threads read
 * requests from /dev/fuse (blocking reads: the kernel wakes one reader per request). A read,
 * write, flush, fsync or fallocate is served by the thread that read it: each chunk (at most
 * chunk_bytes) waits for its fair turn from the scheduler core (themis_core_api.acquire, no
 * GIL), runs pread/pwrite on the descriptor that open made as the caller (registered by Python
 * at open/create, dropped at release; no path is resolved here), holds the turn for the
 * emulated device time when device emulation is on, and the thread replies on /dev/fuse. Any
 * other request is passed whole through the socket pair to pyfuse3's trio loop, unchanged;
 * pyfuse3's replies come back through it and a forwarder thread writes them to /dev/fuse.
 * Per-job bytes, operations and queue wait are counted here and read at scrape time.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../sched/core_api.h"

#define NBUCKETS 4096
#define MAX_THREADS 1024

/* -- per-job counters and open files ------------------------------------------------------ */

typedef struct jobstat {
    int32_t job;
    int files; /* open files that point here (under tab_lock) */
    _Atomic uint64_t rbytes, wbytes, rops, wops, wait_ns;
    struct jobstat *next;
} jobstat;

typedef struct dfile {
    uint64_t fh;
    int fd;
    int refs; /* queued or running requests (under tab_lock) */
    jobstat *js;
    struct dfile *next;
} dfile;

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tab_idle = PTHREAD_COND_INITIALIZER;
static dfile *files[NBUCKETS];
static jobstat *jobs[NBUCKETS];

static unsigned bucket(uint64_t key) { return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 52); }

static jobstat *job_get(int32_t job, int create) /* tab_lock held */
{
    jobstat **at = &jobs[bucket((uint32_t)job)];
    for (jobstat *j = *at; j; j = j->next)
        if (j->job == job)
            return j;
    if (!create)
        return NULL;
    jobstat *j = calloc(1, sizeof *j);
    if (j) {
        j->job = job;
        j->next = *at;
        *at = j;
    }
    return j;
}

static dfile *file_ref(uint64_t fh)
{
    pthread_mutex_lock(&tab_lock);
    dfile *f = files[bucket(fh)];
    while (f && f->fh != fh)
        f = f->next;
    if (f)
        f->refs++;
    pthread_mutex_unlock(&tab_lock);
    return f;
}

static void file_unref(dfile *f)
{
    pthread_mutex_lock(&tab_lock);
    if (--f->refs == 0)
        pthread_cond_broadcast(&tab_idle);
    pthread_mutex_unlock(&tab_lock);
}

/* -- the fair turn: the compiled scheduler core (themis/sched/core_api.h) ------------------- */

static const themis_core_api *api;
static ts_core *core;
static PyObject *core_owner; /* keeps the scheduler object alive */
static uint64_t chunk_bytes = 1 << 20;

/* -- device-rate emulation (themis/fs/device.py, shared_device.py) ------------------------ */

static double dev_bandwidth;
static int dev_fd = -1;
static double dev_free_at;
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Occupy the emulated device for nbytes (after the syscall, holding the turn). */
static void occupy(uint64_t nbytes)
{
    if (dev_bandwidth <= 0)
        return;
    double end, now = now_mono();
    if (dev_fd >= 0) { /* one device shared by several daemons: its free time in a file */
        double free_at = 0;
        flock(dev_fd, LOCK_EX);
        if (pread(dev_fd, &free_at, sizeof free_at, 0) != (ssize_t)sizeof free_at)
            free_at = 0;
        end = (free_at > now ? free_at : now) + (double)nbytes / dev_bandwidth;
        if (pwrite(dev_fd, &end, sizeof end, 0) != (ssize_t)sizeof end)
            end = now;
        flock(dev_fd, LOCK_UN);
    } else {
        pthread_mutex_lock(&dev_lock);
        end = (dev_free_at > now ? dev_free_at : now) + (double)nbytes / dev_bandwidth;
        dev_free_at = end;
        pthread_mutex_unlock(&dev_lock);
    }
    struct timespec ts = {(time_t)end, (long)((end - (double)(time_t)end) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Wait for one chunk's turn; adds the wait to the job's counter. */
static int64_t turn(dfile *f, uint64_t nbytes)
{
    uint64_t t0 = now_ns();
    int64_t ticket = api->acquire(core, f->js->job, nbytes);
    atomic_fetch_add_explicit(&f->js->wait_ns, now_ns() - t0, memory_order_relaxed);
    return ticket;
}

/* -- the FUSE device: data requests served here, the rest passed to pyfuse3 ----------------- */

static int fuse_dev = -1; /* the real /dev/fuse descriptor (a dup of the session's) */
static int fwd = -1;      /* our end of the socket pair that replaced the session's fd */
static int session_fd = -1; /* the descriptor number libfuse and pyfuse3 use */
static struct fuse_session *session;
static volatile sig_atomic_t stopping;
static _Atomic int ended;
static pthread_t threads[MAX_THREADS + 1]; /* readers, then the reply forwarder */
static int nthreads;

#define WAKE_SIGNAL (SIGRTMIN + 3)
#define REQ_BUF ((1 << 20) + 8192) /* max_write (1 MiB) + headers; >= FUSE_MIN_READ_BUFFER */

static void reply(uint64_t unique, int err, const void *data, size_t n)
{
    struct fuse_out_header h = {(uint32_t)(sizeof h + n), -err, unique};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)data, n}};
    /* ENOENT: the request was interrupted meanwhile; nothing else to do */
    if (writev(fuse_dev, iov, n ? 2 : 1) < 0 && errno != ENOENT)
        fprintf(stderr, "themis datapath: reply failed: %s\n", strerror(errno));
}

static int opt_splice_reads, opt_splice_writes;
#define SPLICE_MIN (64 << 10)
#define WRITE_HEAD (sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in))

/* Empty a pipe left half-full by a failed splice. */
static void drain(int p[2])
{
    char scratch[65536];
    while (read(p[0], scratch, sizeof scratch) > 0)
        ;
}

/* The size of the threads' pipes: 2 MiB where allowed (CAP_SYS_RESOURCE in the initial user
 * namespace), else the system's pipe-max-size; 0 until probed, -1 when pipes cannot grow. */
static _Atomic long pipe_bytes;

static long pipe_size(int w)
{
    if (fcntl(w, F_SETPIPE_SZ, 2 << 20) >= (2 << 20))
        return 2 << 20;
    long max = 0;
    FILE *f = fopen("/proc/sys/fs/pipe-max-size", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 0;
        fclose(f);
    }
    long got = max > 0 ? fcntl(w, F_SETPIPE_SZ, max) : -1;
    return got >= (64 << 10) ? got : -1;
}

/* Bytes of data a request or reply spliced through a thread's pipe may carry: one slot for the
 * header and one for an unaligned start (0 when pipes are unavailable). */
static size_t splice_room(void)
{
    long b = atomic_load(&pipe_bytes);
    if (b == 0) { /* probe once */
        int p[2];
        b = -1;
        if (pipe2(p, O_CLOEXEC) == 0) {
            b = pipe_size(p[1]);
            close(p[0]);
            close(p[1]);
        }
        atomic_store(&pipe_bytes, b);
    }
    return b > 0 ? (size_t)b - 2 * 4096 : 0;
}

/* This thread's pipe for spliced requests and replies (empty between requests); -1 when
 * splicing is off or impossible. */
static int thread_pipe(int p[2])
{
    if (p[0] >= 0 || !(opt_splice_reads || opt_splice_writes) || !splice_room())
        return p[0];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return p[0] = -1;
    if (pipe_size(p[1]) != atomic_load(&pipe_bytes)) {
        close(p[0]);
        close(p[1]);
        return p[0] = p[1] = -1;
    }
    return p[0];
}

/* Reply to a read of at most one chunk without copying: the file's pages go into the pipe
 * (at the chunk's turn, holding it for the emulated device time), then the pipe to the kernel.
 * Returns the bytes sent, or -1 when the caller should fall back to pread (nothing sent). */
static ssize_t splice_read(dfile *f, uint64_t unique, uint64_t offset, size_t size, int p[2])
{
    struct stat st;
    if (fstat(f->fd, &st) < 0)
        return -1;
    size_t n = 0;
    if ((uint64_t)st.st_size > offset)
        n = (uint64_t)st.st_size - offset < size ? (size_t)((uint64_t)st.st_size - offset) : size;
    struct fuse_out_header h = {(uint32_t)(sizeof h + n), 0, unique};
    int64_t ticket = turn(f, size);
    if (ticket < 0)
        return -1;
    ssize_t sent = -1;
    size_t got = 0;
    loff_t at = (loff_t)offset;
    if (write(p[1], &h, sizeof h) == (ssize_t)sizeof h) {
        while (got < n) {
            ssize_t r = splice(f->fd, &at, p[1], NULL, n - got, SPLICE_F_MOVE);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
    }
    if (got == n) {
        occupy(n);
        ssize_t w = splice(p[0], NULL, fuse_dev, NULL, sizeof h + n, SPLICE_F_MOVE);
        if (w == (ssize_t)(sizeof h + n) || (w < 0 && errno == ENOENT)) /* ENOENT: interrupted */
            sent = (ssize_t)n;
    }
    api->release(core, ticket);
    if (sent < 0)
        drain(p);
    return sent;
}

/* The thread's buffer, at least n bytes; 0 or -1. */
static int grow(char **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    char *grown = realloc(*buf, n);
    if (!grown)
        return -1;
    *buf = grown;
    *cap = n;
    return 0;
}

static void do_read(dfile *f, uint64_t unique, const struct fuse_read_in *in, char **buf,
                    size_t *cap, int p[2])
{
    size_t size = in->size;
    /* small reads stay copied: for 4 KiB the fstat and pipe round trips cost a third of the
     * IOPS; a read larger than the pipe's room is copied too */
    if (opt_splice_reads && size >= SPLICE_MIN && size <= chunk_bytes && size <= splice_room() &&
        thread_pipe(p) >= 0) {
        ssize_t sent = splice_read(f, unique, in->offset, size, p);
        if (sent >= 0) {
            atomic_fetch_add_explicit(&f->js->rbytes, (uint64_t)sent, memory_order_relaxed);
            atomic_fetch_add_explicit(&f->js->rops, 1, memory_order_relaxed);
            return;
        }
    }
    if (grow(buf, cap, size) < 0) {
        reply(unique, ENOMEM, NULL, 0);
        return;
    }
    size_t done = 0;
    int err = 0;
    while (done < size) {
        size_t n = size - done < chunk_bytes ? size - done : chunk_bytes;
        int64_t ticket = turn(f, n);
        if (ticket < 0) {
            err = (int)-ticket;
            break;
        }
        ssize_t got = pread(f->fd, *buf + done, n, (off_t)(in->offset + done));
        if (got < 0)
            err = errno;
        else {
            occupy((uint64_t)got);
            done += (size_t)got;
        }
        api->release(core, ticket);
        if (got < (ssize_t)n) /* end of file or error */
            break;
    }
    if (err && done == 0) {
        reply(unique, err, NULL, 0);
        return;
    }
    atomic_fetch_add_explicit(&f->js->rbytes, done, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->js->rops, 1, memory_order_relaxed);
    reply(unique, 0, *buf, done);
}

/* Read exactly n bytes from the thread's pipe (they are already there); 0 or -1. */
static int from_pipe(int p[2], char *to, size_t n)
{
    while (n) {
        ssize_t r = read(p[0], to, n);
        if (r <= 0)
            return -1;
        to += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Write one chunk of n bytes at off: from data, or (data NULL) from the thread's pipe, where
 * the kernel left a spliced write's data (the page cache's pages referenced, not copied): by
 * splice into the file (one copy, as a native write) while the file takes it, else (O_APPEND)
 * through the thread's buffer. Returns the bytes written; *err is set on a failure. */
static size_t write_chunk(int fd, uint64_t off, size_t n, const char *data, int p[2], char **buf,
                          size_t *cap, int *err)
{
    size_t put = 0, base = 0;
    const char *src = data;
    if (!data) {
        while (put < n) {
            loff_t at = (loff_t)(off + put);
            ssize_t w = splice(p[0], NULL, fd, &at, n - put, SPLICE_F_MOVE);
            if (w <= 0)
                break; /* EINVAL: O_APPEND; another error shows again in pwrite */
            put += (size_t)w;
        }
        if (put == n)
            return n;
        if (grow(buf, cap, n - put) < 0 || from_pipe(p, *buf, n - put) < 0) {
            *err = ENOMEM;
            return put;
        }
        src = *buf;
        base = put;
    }
    while (put < n) {
        ssize_t w = pwrite(fd, src + put - base, n - put, (off_t)(off + put));
        if (w <= 0) {
            *err = w < 0 ? errno : EIO;
            break;
        }
        put += (size_t)w;
    }
    return put;
}

/* A write, chunk by chunk at each chunk's turn: its data follows the headers, or (data NULL)
 * is in the thread's pipe, which is empty afterwards. */
static void do_write(dfile *f, uint64_t unique, const struct fuse_write_in *in, const char *data,
                     int p[2], char **buf, size_t *cap)
{
    size_t size = in->size, done = 0;
    int err = 0;
    while (done < size && !err) {
        size_t n = size - done < chunk_bytes ? size - done : chunk_bytes;
        int64_t ticket = turn(f, n);
        if (ticket < 0) {
            err = (int)-ticket;
            break;
        }
        size_t put = write_chunk(f->fd, in->offset + done, n, data ? data + done : NULL, p, buf,
                                 cap, &err);
        occupy(put);
        api->release(core, ticket);
        done += put;
    }
    if (!data && done < size)
        drain(p);
    if (err && done == 0) {
        reply(unique, err, NULL, 0);
        return;
    }
    atomic_fetch_add_explicit(&f->js->wbytes, done, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->js->wops, 1, memory_order_relaxed);
    struct fuse_write_out out = {(uint32_t)done, 0};
    reply(unique, 0, &out, sizeof out);
}

/* Serve a data request (its argument follows the header); 0 when it is not one. A write's
 * data may still be in the thread's pipe (`piped` bytes). */
static int serve(const struct fuse_in_header *h, const char *arg, size_t len, size_t piped,
                 char **buf, size_t *cap, int rp[2])
{
    size_t need;
    switch (h->opcode) {
    case FUSE_READ: need = sizeof(struct fuse_read_in); break;
    case FUSE_WRITE: need = sizeof(struct fuse_write_in); break;
    case FUSE_FLUSH: need = sizeof(struct fuse_flush_in); break;
    case FUSE_FSYNC: need = sizeof(struct fuse_fsync_in); break;
    case FUSE_FALLOCATE: need = sizeof(struct fuse_fallocate_in); break;
    default: return 0;
    }
    uint64_t fh;
    dfile *f = NULL;
    if (len >= need) {
        memcpy(&fh, arg, sizeof fh); /* each of these arguments starts with fh */
        f = file_ref(fh);
    }
    if (!f) {
        if (piped)
            drain(rp);
        reply(h->unique, len < need ? EINVAL : EBADF, NULL, 0);
        return 1;
    }
    int err;
    switch (h->opcode) {
    case FUSE_READ:
        do_read(f, h->unique, (const struct fuse_read_in *)arg, buf, cap, rp);
        break;
    case FUSE_WRITE: {
        const struct fuse_write_in *in = (const struct fuse_write_in *)arg;
        if (piped && piped == in->size)
            do_write(f, h->unique, in, NULL, rp, buf, cap);
        else if (piped || len - need < in->size) {
            if (piped)
                drain(rp);
            reply(h->unique, EINVAL, NULL, 0);
        } else
            do_write(f, h->unique, in, arg + need, rp, buf, cap);
        break;
    }
    case FUSE_FLUSH: { /* close() semantics of the backing store */
        int copy = dup(f->fd);
        err = copy < 0 ? errno : (close(copy) < 0 ? errno : 0);
        reply(h->unique, err, NULL, 0);
        break;
    }
    case FUSE_FSYNC: {
        const struct fuse_fsync_in *in = (const struct fuse_fsync_in *)arg;
        err = ((in->fsync_flags & 1) ? fdatasync(f->fd) : fsync(f->fd)) < 0 ? errno : 0;
        reply(h->unique, err, NULL, 0);
        break;
    }
    case FUSE_FALLOCATE: {
        const struct fuse_fallocate_in *in = (const struct fuse_fallocate_in *)arg;
        err = fallocate(f->fd, (int)in->mode, (off_t)in->offset, (off_t)in->length) < 0 ? errno
                                                                                        : 0;
        reply(h->unique, err, NULL, 0);
        break;
    }
    }
    file_unref(f);
    return 1;
}

/* The connection is gone (unmounted): end pyfuse3's loop as libfuse would have. */
static void connection_ended(void)
{
    if (stopping || atomic_exchange(&ended, 1))
        return;
    fuse_session_exit(session);
    /* wake pyfuse3's reader with a request that needs no answer: it then sees the exit flag */
    struct {
        struct fuse_in_header h;
        struct fuse_interrupt_in i;
    } wake = {{sizeof wake, FUSE_INTERRUPT, 0, 0, 0, 0, 0, 0, 0}, {0}};
    if (send(fwd, &wake, sizeof wake, MSG_NOSIGNAL) < 0)
        fprintf(stderr, "themis datapath: cannot wake pyfuse3: %s\n", strerror(errno));
}

/* Read one request into req. With splice_writes, the kernel puts it into the thread's pipe
 * first (a write's data pages referenced, not copied): a write of SPLICE_MIN bytes or more
 * leaves its data there (*piped: how much) and only its headers come into req; anything else
 * comes whole. Returns the request's length, or -1 with errno. */
static ssize_t lost(int p[2])
{
    fprintf(stderr, "themis datapath: a request was lost reading it from the pipe\n");
    drain(p);
    errno = EAGAIN;
    return -1;
}

static ssize_t receive(char *req, int p[2], size_t *piped)
{
    *piped = 0;
    if (!opt_splice_writes || thread_pipe(p) < 0)
        return read(fuse_dev, req, REQ_BUF);
    ssize_t n = splice(fuse_dev, NULL, p[1], NULL, REQ_BUF, 0);
    if (n < 0) {
        if (errno == EINVAL) /* no splice from this device: read from now on */
            opt_splice_writes = 0;
        return -1;
    }
    size_t first = (size_t)n < WRITE_HEAD + SPLICE_MIN ? (size_t)n : WRITE_HEAD;
    if (from_pipe(p, req, first) < 0)
        return lost(p);
    const struct fuse_in_header *h = (const struct fuse_in_header *)req;
    if (first < (size_t)n) {
        if (h->opcode == FUSE_WRITE)
            *piped = (size_t)n - first;
        else if (from_pipe(p, req + first, (size_t)n - first) < 0)
            return lost(p);
    }
    return n;
}

static void *reader(void *unused)
{
    (void)unused;
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, WAKE_SIGNAL);
    pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
    char *req = malloc(REQ_BUF), *buf = NULL;
    size_t cap = 0;
    int rp[2] = {-1, -1}; /* this thread's reply pipe */
    while (req && !stopping) {
        size_t piped;
        ssize_t n = receive(req, rp, &piped);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ENOENT)
                continue; /* ENOENT: the request was interrupted before we read it */
            if (errno == ENODEV)
                connection_ended();
            else
                fprintf(stderr, "themis datapath: reading /dev/fuse: %s\n", strerror(errno));
            break;
        }
        if ((size_t)n < sizeof(struct fuse_in_header))
            continue;
        const struct fuse_in_header *h = (const struct fuse_in_header *)req;
        if (h->opcode == FUSE_INTERRUPT)
            continue; /* neither side handles interrupts: the request completes normally */
        size_t len = (size_t)n - piped - sizeof *h;
        if (!serve(h, req + sizeof *h, len, piped, &buf, &cap, rp) &&
            send(fwd, req, (size_t)n, MSG_NOSIGNAL) < 0)
            fprintf(stderr, "themis datapath: passing a request on: %s\n", strerror(errno));
    }
    free(req);
    free(buf);
    if (rp[0] >= 0) {
        close(rp[0]);
        close(rp[1]);
    }
    return NULL;
}

/* pyfuse3's replies (and notifications) arrive on the socket pair: pass them to the kernel. */
static void *forwarder(void *unused)
{
    (void)unused;
    size_t cap = 4 << 20;
    char *buf = malloc(cap);
    while (buf) {
        ssize_t n = recv(fwd, buf, cap, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (write(fuse_dev, buf, (size_t)n) < 0 && errno != ENOENT && errno != ENODEV)
            fprintf(stderr, "themis datapath: passing a reply on: %s\n", strerror(errno));
    }
    free(buf);
    return NULL;
}

static void on_wake(int sig) { (void)sig; }

/* -- kernel options at INIT: pyfuse3's init, then ours ------------------------------------- */

static void (*py_init)(void *, struct fuse_conn_info *);
static unsigned opt_max_write, opt_max_readahead, opt_max_background;
static int opt_writeback;

static void h_init(void *userdata, struct fuse_conn_info *conn)
{
    py_init(userdata, conn);
    if (opt_max_write)
        conn->max_write = opt_max_write;
    if (opt_max_readahead)
        conn->max_readahead = opt_max_readahead;
    if (opt_max_background)
        conn->max_background = opt_max_background;
    if (opt_writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
        conn->want |= FUSE_CAP_WRITEBACK_CACHE;
    if (opt_splice_writes) { /* a whole write must fit a thread's pipe */
        size_t room = splice_room(), fit = 1 << 20;
        while (fit > room && fit > (64 << 10))
            fit >>= 1;
        if (fit > room)
            opt_splice_writes = 0;
        else if (conn->max_write > fit) {
            fprintf(stderr, "themis datapath: pipes of %ld bytes here: writes of at most %zu "
                    "bytes, spliced\n", atomic_load(&pipe_bytes), fit);
            conn->max_write = (unsigned)fit;
        }
    }
    /* libfuse talks to a socket now: one read or writev per message, never splice */
    conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
}

/* -- Python interface ---------------------------------------------------------------------- */

static PyObject *py_configure(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"api", "scheduler", "chunk_bytes", "bandwidth", "shared_fd", NULL};
    PyObject *capsule, *sched;
    unsigned long long chunk;
    double bandwidth;
    int shared_fd;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOKdi", names, &capsule, &sched, &chunk,
                                     &bandwidth, &shared_fd))
        return NULL;
    if (nthreads) {
        PyErr_SetString(PyExc_RuntimeError, "configure before start");
        return NULL;
    }
    if (chunk < 4096) {
        PyErr_SetString(PyExc_ValueError, "chunk_bytes must be at least 4096");
        return NULL;
    }
    /* the capsule comes from themis.sched.core_api(), the package's public name for it */
    const themis_core_api *a = PyCapsule_GetPointer(capsule, THEMIS_CORE_CAPSULE);
    if (!a)
        return NULL;
    if (a->version != THEMIS_CORE_API_VERSION) {
        PyErr_Format(PyExc_RuntimeError, "scheduler core API version %d, expected %d",
                     a->version, THEMIS_CORE_API_VERSION);
        return NULL;
    }
    ts_core *c = a->from_object(sched);
    if (!c)
        return NULL;
    Py_INCREF(sched);
    Py_XSETREF(core_owner, sched);
    api = a;
    core = c;
    chunk_bytes = chunk;
    dev_bandwidth = bandwidth;
    dev_fd = shared_fd;
    Py_RETURN_NONE;
}

static PyObject *py_set_kernel_options(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"max_write",    "max_readahead", "max_background", "writeback_cache",
                            "splice_reads", "splice_writes", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "IIIppp", names, &opt_max_write,
                                     &opt_max_readahead, &opt_max_background, &opt_writeback,
                                     &opt_splice_reads, &opt_splice_writes))
        return NULL;
    Py_RETURN_NONE;
}

/* Take the data path over (right after pyfuse3.init, before the session loop and FUSE INIT):
 * wrap pyfuse3's init in the operation table at `table`, and put a socket pair in place of
 * the session's /dev/fuse descriptor. */
static PyObject *py_install(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long table, se;
    if (!PyArg_ParseTuple(args, "KK", &table, &se))
        return NULL;
    if (!core) {
        PyErr_SetString(PyExc_RuntimeError, "configure first");
        return NULL;
    }
    if (fuse_dev >= 0) {
        PyErr_SetString(PyExc_RuntimeError, "already installed");
        return NULL;
    }
    struct fuse_lowlevel_ops *ops = (struct fuse_lowlevel_ops *)(uintptr_t)table;
    struct fuse_session *s = (struct fuse_session *)(uintptr_t)se;
    int sfd = fuse_session_fd(s);
    if (!ops->init || !ops->lookup || sfd < 0) {
        PyErr_SetString(PyExc_ValueError, "not pyfuse3's session");
        return NULL;
    }
    int pair[2], size = 8 << 20;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    for (int i = 0; i < 2; i++) { /* a message must fit whole: readdir replies, xattrs */
        setsockopt(pair[i], SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size);
        setsockopt(pair[i], SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
    }
    int dev = fcntl(sfd, F_DUPFD_CLOEXEC, 0);
    if (dev < 0 || dup3(pair[0], sfd, O_CLOEXEC) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        if (dev >= 0)
            close(dev);
        close(pair[0]);
        close(pair[1]);
        return NULL;
    }
    close(pair[0]);
    session_fd = sfd;
    fuse_dev = dev;
    fwd = pair[1];
    session = s;
    ended = 0;
    if (ops->init != h_init) {
        py_init = ops->init;
        ops->init = h_init;
    }
    Py_RETURN_NONE;
}

static PyObject *py_start(PyObject *self, PyObject *args)
{
    (void)self;
    int n;
    if (!PyArg_ParseTuple(args, "i", &n))
        return NULL;
    if (n < 1 || n > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be 1..%d", MAX_THREADS);
        return NULL;
    }
    if (nthreads || fuse_dev < 0) {
        PyErr_SetString(PyExc_RuntimeError, "install first, start once");
        return NULL;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_wake; /* no SA_RESTART: a blocked read returns EINTR */
    sigemptyset(&sa.sa_mask);
    if (sigaction(WAKE_SIGNAL, &sa, NULL) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    stopping = 0;
    for (int i = 0; i <= n; i++) {
        int err = pthread_create(&threads[i], NULL, i < n ? reader : forwarder, NULL);
        if (err) {
            nthreads = i;
            errno = err;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    nthreads = n + 1;
    Py_RETURN_NONE;
}

/* After the session loop ended: stop the threads (each finishes the request it serves) and
 * give the session its /dev/fuse descriptor back; libfuse then unmounts as usual. */
static PyObject *py_stop(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS;
    stopping = 1;
    if (fwd >= 0)
        shutdown(fwd, SHUT_RDWR);
    for (int i = 0; i < nthreads; i++) {
        struct timespec pause = {0, 1000000};
        while (pthread_tryjoin_np(threads[i], NULL) == EBUSY) {
            pthread_kill(threads[i], WAKE_SIGNAL);
            nanosleep(&pause, NULL);
        }
    }
    Py_END_ALLOW_THREADS;
    nthreads = 0;
    if (fuse_dev >= 0) {
        dup3(fuse_dev, session_fd, O_CLOEXEC);
        close(fuse_dev);
    }
    if (fwd >= 0)
        close(fwd);
    fuse_dev = fwd = -1;
    Py_RETURN_NONE;
}

static PyObject *py_register(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long fh;
    int fd, job;
    if (!PyArg_ParseTuple(args, "Kii", &fh, &fd, &job))
        return NULL;
    dfile *f = calloc(1, sizeof *f);
    if (!f)
        return PyErr_NoMemory();
    f->fh = fh;
    f->fd = fd;
    pthread_mutex_lock(&tab_lock);
    f->js = job_get(job, 1);
    if (f->js) {
        f->js->files++;
        dfile **at = &files[bucket(fh)];
        f->next = *at;
        *at = f;
    }
    pthread_mutex_unlock(&tab_lock);
    if (!f->js) {
        free(f);
        return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

/* Drop fh; returns once no request uses its descriptor (the caller then closes it). */
static PyObject *py_unregister(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long fh;
    if (!PyArg_ParseTuple(args, "K", &fh))
        return NULL;
    dfile *f = NULL;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&tab_lock);
    for (dfile **at = &files[bucket(fh)]; *at; at = &(*at)->next)
        if ((*at)->fh == fh) {
            f = *at;
            *at = f->next;
            break;
        }
    while (f && f->refs)
        pthread_cond_wait(&tab_idle, &tab_lock);
    if (f)
        f->js->files--;
    pthread_mutex_unlock(&tab_lock);
    Py_END_ALLOW_THREADS;
    free(f);
    return PyBool_FromLong(f != NULL);
}

static PyObject *py_job_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *out = PyDict_New();
    if (!out)
        return NULL;
    pthread_mutex_lock(&tab_lock);
    for (int b = 0; b < NBUCKETS; b++)
        for (jobstat *j = jobs[b]; j; j = j->next) {
            PyObject *v = Py_BuildValue(
                "(KKKKd)", (unsigned long long)atomic_load(&j->rbytes),
                (unsigned long long)atomic_load(&j->wbytes),
                (unsigned long long)atomic_load(&j->rops),
                (unsigned long long)atomic_load(&j->wops), atomic_load(&j->wait_ns) * 1e-9);
            PyObject *k = PyLong_FromLong(j->job);
            if (!v || !k || PyDict_SetItem(out, k, v) < 0) {
                Py_XDECREF(v);
                Py_XDECREF(k);
                pthread_mutex_unlock(&tab_lock);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(v);
            Py_DECREF(k);
        }
    pthread_mutex_unlock(&tab_lock);
    return out;
}

/* Drop a finished job's counters (kept while one of its files is open). */
static PyObject *py_forget_job(PyObject *self, PyObject *args)
{
    (void)self;
    int job, gone = 0;
    if (!PyArg_ParseTuple(args, "i", &job))
        return NULL;
    pthread_mutex_lock(&tab_lock);
    for (jobstat **at = &jobs[bucket((uint32_t)job)]; *at; at = &(*at)->next)
        if ((*at)->job == job) {
            jobstat *j = *at;
            if (j->files == 0) {
                *at = j->next;
                free(j);
                gone = 1;
            }
            break;
        }
    pthread_mutex_unlock(&tab_lock);
    return PyBool_FromLong(gone);
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))py_configure, METH_VARARGS | METH_KEYWORDS,
     "configure(api, scheduler, chunk_bytes, bandwidth, shared_fd): the fair turn, the device"},
    {"set_kernel_options", (PyCFunction)(void (*)(void))py_set_kernel_options,
     METH_VARARGS | METH_KEYWORDS,
     "set_kernel_options(max_write, max_readahead, max_background, writeback_cache, splice_reads, splice_writes)"},
    {"install", py_install, METH_VARARGS, "install(table, session): take /dev/fuse over before FUSE INIT"},
    {"start", py_start, METH_VARARGS, "start(threads): start the reader threads and the reply forwarder"},
    {"stop", py_stop, METH_NOARGS, "stop(): join the threads, close /dev/fuse (after the session loop)"},
    {"register", py_register, METH_VARARGS, "register(fh, fd, job): an open file"},
    {"unregister", py_unregister, METH_VARARGS,
     "unregister(fh) -> bool: drop an open file once no request uses it"},
    {"job_stats", py_job_stats, METH_NOARGS,
     "job_stats() -> {job: (read bytes, write bytes, reads, writes, queue wait s)}"},
    {"forget_job", py_forget_job, METH_VARARGS, "forget_job(job) -> bool"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "themis.fs._datapath", "The compiled FUSE data path.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__datapath(void) { return PyModule_Create(&module); }
