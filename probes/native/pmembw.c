/*
 * _pmembw: the native bandwidth and latency kernel of pmem-advisor's bandwidth probe.
 *
 * Python plans the sweep; this module only maps a file or devdax device and measures one
 * point at a time with pthreads pinned to the CPUs it is given, the GIL released.
 *
 *   Mapping(path, size=0)           map an existing file (whole) or devdax device
 *     .size .is_pmem .persist_method ("libpmem-nt" | "clflush" | "msync")
 *                                                      (module: HAVE_LIBPMEM, ISA)
 *     .prefault(offset, length, cpus)                      write every page once
 *     .run(op, pattern, grouped, access, cpus, duration, ws[, max_bytes]) -> bytes, seconds
 *     .idle_latency(lines, duration, cpu)                  -> ns per dependent load
 *     .persist_latency(lines, duration, cpu)               -> ns per 64 B store+flush+fence
 *     .close()
 *
 * Persistent writes use libpmem (non-temporal copies + drain) when pmem_is_pmem() is true
 * (libpmem itself honours PMEM_IS_PMEM_FORCE=1); otherwise plain stores made durable by
 * msync. Built without HAVE_LIBPMEM, only the plain paths exist: msync for files, and for a
 * devdax device (which has no fsync: msync fails there with EINVAL, as a real 6.1 kernel
 * showed) plain stores each flushed with CLFLUSH and fenced (x86; elsewhere a devdax device
 * needs libpmem and mapping it says so). Reads are plain vector
 * loads chosen at run time (AVX-512, AVX2 or SSE2): no -march=native in the build.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PMEMBW_X86 1
#define PMEMBW_CAN_CLFLUSH 1
#else
#define PMEMBW_CAN_CLFLUSH 0
#endif

#ifdef HAVE_LIBPMEM
#include <libpmem.h>
#endif

#define PAGE 4096UL
#define MAX_ACCESS (64UL * 1024 * 1024)

/* ---------------------------------------------------------------- time, rng, cpus */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int pin_attr(pthread_attr_t *attr, int cpu)
{
    if (cpu < 0)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_attr_setaffinity_np(attr, sizeof(set), &set);
}

/* ---------------------------------------------------------------- read kernels */

typedef uint64_t (*read_fn)(const char *p, size_t n);

static uint64_t read_scalar(const char *p, size_t n)
{
    const uint64_t *q = (const uint64_t *)p;
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i < n / 8; i += 2) {
        a ^= q[i];
        b ^= q[i + 1];
    }
    return a ^ b;
}

#ifdef PMEMBW_X86
__attribute__((target("avx512f"))) static uint64_t read_avx512(const char *p, size_t n)
{
    __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
    __m512i c = _mm512_setzero_si512(), d = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 256 <= n; i += 256) {
        a = _mm512_xor_si512(a, _mm512_load_si512((const void *)(p + i)));
        b = _mm512_xor_si512(b, _mm512_load_si512((const void *)(p + i + 64)));
        c = _mm512_xor_si512(c, _mm512_load_si512((const void *)(p + i + 128)));
        d = _mm512_xor_si512(d, _mm512_load_si512((const void *)(p + i + 192)));
    }
    for (; i < n; i += 64)
        a = _mm512_xor_si512(a, _mm512_load_si512((const void *)(p + i)));
    a = _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d));
    return (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(a));
}

__attribute__((target("avx2"))) static uint64_t read_avx2(const char *p, size_t n)
{
    __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
    __m256i c = _mm256_setzero_si256(), d = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a = _mm256_xor_si256(a, _mm256_load_si256((const __m256i *)(p + i)));
        b = _mm256_xor_si256(b, _mm256_load_si256((const __m256i *)(p + i + 32)));
        c = _mm256_xor_si256(c, _mm256_load_si256((const __m256i *)(p + i + 64)));
        d = _mm256_xor_si256(d, _mm256_load_si256((const __m256i *)(p + i + 96)));
    }
    for (; i < n; i += 32)
        a = _mm256_xor_si256(a, _mm256_load_si256((const __m256i *)(p + i)));
    a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    return (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(a));
}

static uint64_t read_sse2(const char *p, size_t n)
{
    __m128i a = _mm_setzero_si128(), b = _mm_setzero_si128();
    __m128i c = _mm_setzero_si128(), d = _mm_setzero_si128();
    for (size_t i = 0; i < n; i += 64) {
        a = _mm_xor_si128(a, _mm_load_si128((const __m128i *)(p + i)));
        b = _mm_xor_si128(b, _mm_load_si128((const __m128i *)(p + i + 16)));
        c = _mm_xor_si128(c, _mm_load_si128((const __m128i *)(p + i + 32)));
        d = _mm_xor_si128(d, _mm_load_si128((const __m128i *)(p + i + 48)));
    }
    a = _mm_xor_si128(_mm_xor_si128(a, b), _mm_xor_si128(c, d));
    return (uint64_t)_mm_cvtsi128_si64(a);
}
#endif

static read_fn g_read = read_scalar;
static const char *g_isa = "scalar";

static void pick_isa(void)
{
#ifdef PMEMBW_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        g_read = read_avx512;
        g_isa = "avx512";
    } else if (__builtin_cpu_supports("avx2")) {
        g_read = read_avx2;
        g_isa = "avx2";
    } else {
        g_read = read_sse2;
        g_isa = "sse2";
    }
#endif
}

/* ---------------------------------------------------------------- persistence */

/* How writes are made durable: msync of the touched span after the point (files), libpmem's
 * non-temporal copy + drain, or (devdax without libpmem) a plain copy whose lines are flushed
 * with CLFLUSH and fenced. */
enum { PERSIST_MSYNC = 0, PERSIST_LIBPMEM = 1, PERSIST_CLFLUSH = 2 };

#ifdef PMEMBW_X86
static inline void clflush_range(const char *p, size_t n)
{
    for (uintptr_t a = (uintptr_t)p & ~(uintptr_t)63; a < (uintptr_t)p + n; a += 64)
        _mm_clflush((const void *)a);
    _mm_sfence();
}
#endif

/* One persistent copy of an access (see the modes above). */
static inline void write_access(int nt, char *dst, const char *src, size_t n)
{
#ifdef HAVE_LIBPMEM
    if (nt == PERSIST_LIBPMEM) {
        pmem_memcpy_nodrain(dst, src, n);
        pmem_drain();
        return;
    }
#endif
    memcpy(dst, src, n);
#ifdef PMEMBW_X86
    if (nt == PERSIST_CLFLUSH)
        clflush_range(dst, n);
#endif
}

static int msync_span(char *base, size_t lo, size_t hi)
{
    if (hi <= lo)
        return 0;
    size_t a = lo & ~(PAGE - 1);
    return msync(base + a, hi - a, MS_SYNC);
}

/* ---------------------------------------------------------------- one measured point */

enum { OP_READ = 0, OP_WRITE = 1, OP_MIXED = 2 };

typedef struct {
    char *base;
    size_t ws, access;
    int op, rand, grouped, nt, nthreads;
    double duration;
    uint64_t max_bytes; /* per thread, 0: no cap (bounds the dirty data msync must write) */
    /* start gate: threads wait until all are up (go=1), or leave if one failed to start
     * (go=-1); a barrier would deadlock when pthread_create fails part way */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived, go;
} point_cfg;

typedef struct {
    point_cfg *cfg;
    int idx;
    uint64_t rbytes, wbytes, sink;
    size_t lo, hi;  /* span written, for msync */
    double t0, t1;
    char *src;
} worker;

static void *point_thread(void *arg)
{
    worker *w = arg;
    point_cfg *c = w->cfg;
    const size_t A = c->access;
    const int T = c->nthreads;
    size_t region_lo, nchunks;
    if (c->grouped) {
        region_lo = 0;
        nchunks = c->ws / A;
    } else {
        size_t per = (c->ws / (size_t)T) / A * A;
        region_lo = (size_t)w->idx * per;
        nchunks = per / A;
    }
    /* check the clock about every 256 KB moved so the check costs nothing */
    const size_t batch = A >= 262144 ? 1 : 262144 / A;
    uint64_t rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)(w->idx + 1) * 0xBF58476D1CE4E5B9ULL);
    uint64_t sink = 0, i = 0, rb = 0, wb = 0;
    size_t lo = SIZE_MAX, hi = 0;
    const read_fn rd = g_read;

    pthread_mutex_lock(&c->mu);
    c->arrived++;
    pthread_cond_broadcast(&c->cv);
    while (c->go == 0)
        pthread_cond_wait(&c->cv, &c->mu);
    int go = c->go;
    pthread_mutex_unlock(&c->mu);
    if (go < 0)
        return NULL;
    double t0 = now_s(), deadline = t0 + c->duration, t1 = t0;
    for (;;) {
        for (size_t b = 0; b < batch; b++, i++) {
            size_t chunk;
            if (c->rand)
                chunk = (size_t)(xorshift(&rng) % nchunks);
            else if (c->grouped)
                chunk = (size_t)(((uint64_t)w->idx + i * (uint64_t)T) % nchunks);
            else
                chunk = (size_t)(i % nchunks);
            int is_write = c->op == OP_WRITE || (c->op == OP_MIXED && (i & 1));
            if (c->op == OP_MIXED && is_write && !c->rand)
                chunk = (chunk + nchunks / 2) % nchunks; /* write away from the read cursor */
            size_t off = region_lo + chunk * A;
            if (is_write) {
                write_access(c->nt, c->base + off, w->src, A);
                wb += A;
                if (off < lo)
                    lo = off;
                if (off + A > hi)
                    hi = off + A;
            } else {
                sink ^= rd(c->base + off, A);
                rb += A;
            }
        }
        t1 = now_s();
        if (t1 >= deadline || (c->max_bytes && rb + wb >= c->max_bytes))
            break;
    }
    w->t0 = t0;
    w->t1 = t1;
    w->rbytes = rb;
    w->wbytes = wb;
    w->sink = sink;
    w->lo = lo;
    w->hi = hi;
    return NULL;
}

/* Start one pinned thread per entry of cpus (cpu -1: unpinned). Returns 0 or an errno;
 * *started says how many run (the caller releases and joins them). */
static int spawn_some(pthread_t *tids, int n, const int *cpus, void *(*fn)(void *),
                      void *args, size_t argsize, int *started)
{
    *started = 0;
    for (int t = 0; t < n; t++) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        int rc = pin_attr(&attr, cpus[t]);
        if (rc == 0)
            rc = pthread_create(&tids[t], &attr, fn, (char *)args + (size_t)t * argsize);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            return rc;
        *started = t + 1;
    }
    return 0;
}

/* For threads that need no start gate: on failure, join those already started. */
static int spawn(pthread_t *tids, int n, const int *cpus, void *(*fn)(void *), void *args,
                 size_t argsize)
{
    int started;
    int rc = spawn_some(tids, n, cpus, fn, args, argsize, &started);
    if (rc != 0)
        for (int k = 0; k < started; k++)
            pthread_join(tids[k], NULL);
    return rc;
}

/* ---------------------------------------------------------------- the Mapping type */

typedef struct {
    PyObject_HEAD char *addr;
    size_t len;
    int is_pmem;
    int persist; /* PERSIST_*: how writes are made durable */
    int via_libpmem; /* mapped by pmem_map_file, unmap with pmem_unmap */
    int busy;
} Mapping;

static int parse_cpus(PyObject *seq, int **out, int *n)
{
    PyObject *fast = PySequence_Fast(seq, "cpus must be a sequence of CPU numbers");
    if (!fast)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    if (len < 1 || len > 4096) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "cpus must hold 1..4096 entries");
        return -1;
    }
    int *cpus = PyMem_Malloc(sizeof(int) * (size_t)len);
    if (!cpus) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            PyMem_Free(cpus);
            Py_DECREF(fast);
            return -1;
        }
        if (v < -1 || v >= CPU_SETSIZE) {
            PyMem_Free(cpus);
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "bad CPU number %ld", v);
            return -1;
        }
        cpus[i] = (int)v;
    }
    Py_DECREF(fast);
    *out = cpus;
    *n = (int)len;
    return 0;
}

static int check_open(Mapping *m)
{
    if (!m->addr) {
        PyErr_SetString(PyExc_ValueError, "mapping is closed");
        return -1;
    }
    if (m->busy) {
        PyErr_SetString(PyExc_RuntimeError, "mapping is busy in another thread");
        return -1;
    }
    return 0;
}

static int Mapping_init(Mapping *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "size", NULL};
    PyObject *path_obj;
    Py_ssize_t size = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|n", kwlist, PyUnicode_FSConverter, &path_obj,
                                     &size))
        return -1;
    const char *path = PyBytes_AS_STRING(path_obj);
    if (self->addr) {
        PyErr_SetString(PyExc_RuntimeError, "mapping already open");
        Py_DECREF(path_obj);
        return -1;
    }
    void *addr = NULL;
    size_t len = 0;
    int is_pmem = 0, via = 0, err = 0, chardev = 0;
    Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_LIBPMEM
    /* len 0, flags 0: map the whole existing file or devdax device */
    addr = pmem_map_file(path, 0, 0, 0, &len, &is_pmem);
    if (addr)
        via = 1;
    else
        err = errno;
#endif
    if (!addr) {
        int fd = open(path, O_RDWR);
        if (fd < 0) {
            err = errno;
        } else {
            struct stat st;
            if (fstat(fd, &st) != 0) {
                err = errno;
            } else if (S_ISCHR(st.st_mode) && !PMEMBW_CAN_CLFLUSH) {
                err = EOPNOTSUPP; /* devdax has no fsync (msync fails): needs libpmem here */
            } else {
                chardev = S_ISCHR(st.st_mode);
                len = S_ISREG(st.st_mode) ? (size_t)st.st_size : (size_t)size;
                if (len == 0) {
                    err = EINVAL;
                } else {
                    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                    if (p == MAP_FAILED)
                        err = errno;
                    else {
                        addr = p;
                        err = 0;
                    }
                }
            }
            close(fd);
        }
    }
    Py_END_ALLOW_THREADS
    if (!addr) {
        errno = err ? err : EINVAL;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_obj);
        Py_DECREF(path_obj);
        return -1;
    }
    Py_DECREF(path_obj);
#ifdef MADV_HUGEPAGE
    madvise(addr, len, MADV_HUGEPAGE); /* best effort: fewer TLB misses, like devdax 2 MB pages */
#endif
    self->addr = addr;
    self->len = len;
    self->is_pmem = is_pmem;
    self->persist = is_pmem ? PERSIST_LIBPMEM : chardev ? PERSIST_CLFLUSH : PERSIST_MSYNC;
    self->via_libpmem = via;
    return 0;
}

static void unmap(Mapping *self)
{
    if (!self->addr)
        return;
#ifdef HAVE_LIBPMEM
    if (self->via_libpmem)
        pmem_unmap(self->addr, self->len);
    else
#endif
        munmap(self->addr, self->len);
    self->addr = NULL;
}

static void Mapping_dealloc(Mapping *self)
{
    unmap(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Mapping_close(Mapping *self, PyObject *unused)
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "mapping is busy in another thread");
        return NULL;
    }
    unmap(self);
    Py_RETURN_NONE;
}

/* ---- prefault: write every page of [offset, offset+length) once, in parallel */

typedef struct {
    char *dst;
    size_t n;
    int nt;
} fill_job;

static void *fill_thread(void *arg)
{
    fill_job *j = arg;
    static const char pattern[PAGE] __attribute__((aligned(64))) = {[0 ... PAGE - 1] = 0x5a};
    for (size_t off = 0; off < j->n; off += PAGE) {
        size_t k = j->n - off < PAGE ? j->n - off : PAGE;
#ifdef HAVE_LIBPMEM
        if (j->nt == PERSIST_LIBPMEM) {
            pmem_memcpy_persist(j->dst + off, pattern, k);
            continue;
        }
#endif
        write_access(j->nt, j->dst + off, pattern, k);
    }
    return NULL;
}

static PyObject *Mapping_prefault(Mapping *self, PyObject *args)
{
    Py_ssize_t offset, length;
    PyObject *cpu_seq;
    if (!PyArg_ParseTuple(args, "nnO", &offset, &length, &cpu_seq))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    if (offset < 0 || length < 0 || (size_t)offset + (size_t)length > self->len) {
        PyErr_SetString(PyExc_ValueError, "range outside the mapping");
        return NULL;
    }
    int *cpus, n;
    if (parse_cpus(cpu_seq, &cpus, &n) < 0)
        return NULL;
    fill_job *jobs = PyMem_Calloc((size_t)n, sizeof(fill_job));
    pthread_t *tids = PyMem_Calloc((size_t)n, sizeof(pthread_t));
    if (!jobs || !tids) {
        PyMem_Free(jobs);
        PyMem_Free(tids);
        PyMem_Free(cpus);
        return PyErr_NoMemory();
    }
    size_t per = ((size_t)length / (size_t)n + PAGE - 1) & ~(PAGE - 1);
    for (int t = 0; t < n; t++) {
        size_t lo = (size_t)t * per;
        lo = lo > (size_t)length ? (size_t)length : lo;
        size_t hi = lo + per > (size_t)length ? (size_t)length : lo + per;
        jobs[t].dst = self->addr + offset + lo;
        jobs[t].n = hi - lo;
        jobs[t].nt = self->persist;
    }
    int rc, sync_rc = 0, sync_err = 0;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = spawn(tids, n, cpus, fill_thread, jobs, sizeof(fill_job));
    if (rc == 0) {
        for (int t = 0; t < n; t++)
            pthread_join(tids[t], NULL);
        if (self->persist == PERSIST_MSYNC && length > 0) {
            sync_rc = msync_span(self->addr, (size_t)offset, (size_t)offset + (size_t)length);
            sync_err = errno;
        }
    }
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyMem_Free(jobs);
    PyMem_Free(tids);
    PyMem_Free(cpus);
    if (rc != 0) {
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (sync_rc != 0) {
        errno = sync_err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (PyErr_CheckSignals() < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ---- run: one bandwidth point */

static PyObject *Mapping_run(Mapping *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"op",       "pattern", "grouped",   "access", "cpus",
                             "duration", "ws",      "max_bytes", NULL};
    const char *op_s, *pat_s;
    int grouped;
    Py_ssize_t access, ws;
    PyObject *cpu_seq;
    double duration;
    unsigned long long max_bytes = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sspnOdn|K", kwlist, &op_s, &pat_s, &grouped,
                                     &access, &cpu_seq, &duration, &ws, &max_bytes))
        return NULL;
    if (check_open(self) < 0)
        return NULL;
    int op = !strcmp(op_s, "read") ? OP_READ
             : !strcmp(op_s, "write") ? OP_WRITE
             : !strcmp(op_s, "mixed") ? OP_MIXED
                                      : -1;
    int rnd = !strcmp(pat_s, "rand") ? 1 : !strcmp(pat_s, "seq") ? 0 : -1;
    if (op < 0 || rnd < 0) {
        PyErr_SetString(PyExc_ValueError, "op must be read|write|mixed, pattern seq|rand");
        return NULL;
    }
    if (access < 64 || access % 64 || (size_t)access > MAX_ACCESS) {
        PyErr_SetString(PyExc_ValueError, "access must be a multiple of 64 B up to 64 MB");
        return NULL;
    }
    if (duration <= 0 || duration > 600) {
        PyErr_SetString(PyExc_ValueError, "duration must be in (0, 600] seconds");
        return NULL;
    }
    int *cpus, n;
    if (parse_cpus(cpu_seq, &cpus, &n) < 0)
        return NULL;
    if (ws <= 0 || (size_t)ws > self->len || (size_t)ws / (size_t)n < 2 * (size_t)access) {
        PyMem_Free(cpus);
        PyErr_SetString(PyExc_ValueError,
                        "working set must fit the mapping and hold 2 accesses per thread");
        return NULL;
    }
    point_cfg cfg = {.base = self->addr, .ws = (size_t)ws, .access = (size_t)access, .op = op,
                     .rand = rnd, .grouped = grouped, .nt = self->persist, .nthreads = n,
                     .duration = duration, .max_bytes = max_bytes / (unsigned)n};
    worker *ws_arr = PyMem_Calloc((size_t)n, sizeof(worker));
    pthread_t *tids = PyMem_Calloc((size_t)n, sizeof(pthread_t));
    int failed = !ws_arr || !tids;
    for (int t = 0; !failed && t < n; t++) {
        ws_arr[t].cfg = &cfg;
        ws_arr[t].idx = t;
        if (posix_memalign((void **)&ws_arr[t].src, 64, (size_t)access) != 0)
            failed = 1;
        else
            memset(ws_arr[t].src, 0xa5 ^ t, (size_t)access);
    }
    if (failed) {
        for (int t = 0; ws_arr && t < n; t++)
            free(ws_arr[t].src);
        PyMem_Free(ws_arr);
        PyMem_Free(tids);
        PyMem_Free(cpus);
        return PyErr_NoMemory();
    }
    pthread_mutex_init(&cfg.mu, NULL);
    pthread_cond_init(&cfg.cv, NULL);
    int rc, started, sync_rc = 0, sync_err = 0;
    double t_start = 0, t_end = 0;
    uint64_t rb = 0, wb = 0, sink = 0;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = spawn_some(tids, n, cpus, point_thread, ws_arr, sizeof(worker), &started);
    pthread_mutex_lock(&cfg.mu);
    while (rc == 0 && cfg.arrived < n) /* all up: start together */
        pthread_cond_wait(&cfg.cv, &cfg.mu);
    cfg.go = rc == 0 ? 1 : -1;
    pthread_cond_broadcast(&cfg.cv);
    pthread_mutex_unlock(&cfg.mu);
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    if (rc == 0) {
        size_t lo = SIZE_MAX, hi = 0;
        t_start = ws_arr[0].t0;
        t_end = ws_arr[0].t1;
        for (int t = 0; t < n; t++) {
            worker *w = &ws_arr[t];
            t_start = w->t0 < t_start ? w->t0 : t_start;
            t_end = w->t1 > t_end ? w->t1 : t_end;
            rb += w->rbytes;
            wb += w->wbytes;
            sink ^= w->sink;
            lo = w->lo < lo ? w->lo : lo;
            hi = w->hi > hi ? w->hi : hi;
        }
        /* msync path: the data is durable only once msync returns, so it is timed */
        if (cfg.nt == PERSIST_MSYNC && wb > 0) {
            sync_rc = msync_span(self->addr, lo, hi);
            sync_err = errno;
            t_end = now_s();
        }
    }
    Py_END_ALLOW_THREADS
    self->busy = 0;
    pthread_cond_destroy(&cfg.cv);
    pthread_mutex_destroy(&cfg.mu);
    for (int t = 0; t < n; t++)
        free(ws_arr[t].src);
    PyMem_Free(ws_arr);
    PyMem_Free(tids);
    PyMem_Free(cpus);
    if (rc != 0) {
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (sync_rc != 0) {
        errno = sync_err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (PyErr_CheckSignals() < 0)
        return NULL;
    return Py_BuildValue("{s:K,s:K,s:d,s:K}", "read_bytes", (unsigned long long)rb,
                         "write_bytes", (unsigned long long)wb, "seconds", t_end - t_start,
                         "checksum", (unsigned long long)sink);
}

/* ---- latency: dependent loads over a random cycle, and 64 B persists */

typedef struct {
    char *base;
    size_t lines;
    double duration;
    double ns;
    uint64_t hops;
    int nt;
    int err;
} lat_job;

static void *chase_thread(void *arg)
{
    lat_job *j = arg;
    uint32_t *perm = malloc(sizeof(uint32_t) * j->lines);
    if (!perm) {
        j->err = ENOMEM;
        return NULL;
    }
    uint64_t rng = 0x2545F4914F6CDD1DULL;
    for (size_t i = 0; i < j->lines; i++)
        perm[i] = (uint32_t)i;
    for (size_t i = j->lines - 1; i > 0; i--) { /* Fisher-Yates: one cycle through all lines */
        size_t k = (size_t)(xorshift(&rng) % (i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[k];
        perm[k] = t;
    }
    for (size_t i = 0; i < j->lines; i++) {
        char *from = j->base + (size_t)perm[i] * 64;
        char *to = j->base + (size_t)perm[(i + 1) % j->lines] * 64;
        *(char **)from = to;
    }
    char *p = j->base + (size_t)perm[0] * 64;
    free(perm);
    for (int i = 0; i < 100000; i++) /* warm the TLB and the walker */
        p = *(char *volatile *)p;
    uint64_t hops = 0;
    double t0 = now_s(), deadline = t0 + j->duration, t1;
    do {
        for (int i = 0; i < 4096; i++)
            p = *(char *volatile *)p;
        hops += 4096;
        t1 = now_s();
    } while (t1 < deadline);
    j->ns = (t1 - t0) * 1e9 / (double)hops;
    j->hops = hops + ((uintptr_t)p & 1); /* keep p alive */
    return NULL;
}

static void *persist_thread(void *arg)
{
    lat_job *j = arg;
    uint64_t hops = 0, v = 1;
    double t0 = now_s(), deadline = t0 + j->duration, t1;
    size_t line = 0;
    do {
        for (int i = 0; i < 64; i++) {
            uint64_t *dst = (uint64_t *)(j->base + line * 64);
            for (int w = 0; w < 8; w++)
                dst[w] = v++;
#ifdef HAVE_LIBPMEM
            if (j->nt == PERSIST_LIBPMEM) {
                pmem_flush(dst, 64);
                pmem_drain();
            } else
#endif
#ifdef PMEMBW_X86
            if (j->nt == PERSIST_CLFLUSH)
                clflush_range((const char *)dst, 64);
            else
#endif
            if (msync((char *)((uintptr_t)dst & ~(PAGE - 1)), PAGE, MS_SYNC) != 0) {
                j->err = errno;
                return NULL;
            }
            line = (line + 1) % j->lines;
        }
        hops += 64;
        t1 = now_s();
    } while (t1 < deadline);
    j->ns = (t1 - t0) * 1e9 / (double)hops;
    j->hops = hops;
    return NULL;
}

static PyObject *run_latency(Mapping *self, void *(*fn)(void *), Py_ssize_t lines,
                             double duration, int cpu)
{
    if (check_open(self) < 0)
        return NULL;
    if (lines < 2 || (size_t)lines * 64 > self->len || lines > (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "lines must be 2..mapping size / 64");
        return NULL;
    }
    if (duration <= 0 || duration > 600) {
        PyErr_SetString(PyExc_ValueError, "duration must be in (0, 600] seconds");
        return NULL;
    }
    lat_job job = {.base = self->addr, .lines = (size_t)lines, .duration = duration,
                   .nt = self->persist};
    pthread_t tid;
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = spawn(&tid, 1, &cpu, fn, &job, sizeof(job));
    if (rc == 0)
        pthread_join(tid, NULL);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (rc == 0)
        rc = job.err;
    if (rc != 0) {
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (PyErr_CheckSignals() < 0)
        return NULL;
    return Py_BuildValue("{s:d,s:K}", "ns", job.ns, "count", (unsigned long long)job.hops);
}

static PyObject *Mapping_idle_latency(Mapping *self, PyObject *args)
{
    Py_ssize_t lines;
    double duration;
    int cpu;
    if (!PyArg_ParseTuple(args, "ndi", &lines, &duration, &cpu))
        return NULL;
    return run_latency(self, chase_thread, lines, duration, cpu);
}

static PyObject *Mapping_persist_latency(Mapping *self, PyObject *args)
{
    Py_ssize_t lines;
    double duration;
    int cpu;
    if (!PyArg_ParseTuple(args, "ndi", &lines, &duration, &cpu))
        return NULL;
    return run_latency(self, persist_thread, lines, duration, cpu);
}

static PyObject *Mapping_get_size(Mapping *self, void *c)
{
    return PyLong_FromSize_t(self->addr ? self->len : 0);
}

static PyObject *Mapping_get_is_pmem(Mapping *self, void *c)
{
    return PyBool_FromLong(self->is_pmem);
}

static PyObject *Mapping_get_method(Mapping *self, void *c)
{
    static const char *names[] = {"msync", "libpmem-nt", "clflush"};
    return PyUnicode_FromString(names[self->persist]);
}

static PyObject *Mapping_get_closed(Mapping *self, void *c)
{
    return PyBool_FromLong(self->addr == NULL);
}

static PyMethodDef Mapping_methods[] = {
    {"prefault", (PyCFunction)Mapping_prefault, METH_VARARGS,
     "prefault(offset, length, cpus): write every page of the range once"},
    {"run", (PyCFunction)(void (*)(void))Mapping_run, METH_VARARGS | METH_KEYWORDS,
     "run(op, pattern, grouped, access, cpus, duration, ws, max_bytes=0) -> dict: one point"},
    {"idle_latency", (PyCFunction)Mapping_idle_latency, METH_VARARGS,
     "idle_latency(lines, duration, cpu) -> dict(ns, count): pointer chase"},
    {"persist_latency", (PyCFunction)Mapping_persist_latency, METH_VARARGS,
     "persist_latency(lines, duration, cpu) -> dict(ns, count): 64 B store+flush+fence"},
    {"close", (PyCFunction)Mapping_close, METH_NOARGS, "unmap"},
    {NULL},
};

static PyGetSetDef Mapping_getset[] = {
    {"size", (getter)Mapping_get_size, NULL, "mapped bytes", NULL},
    {"is_pmem", (getter)Mapping_get_is_pmem, NULL, "pmem_is_pmem() of the mapping", NULL},
    {"persist_method", (getter)Mapping_get_method, NULL, "libpmem-nt, clflush or msync", NULL},
    {"closed", (getter)Mapping_get_closed, NULL, "unmapped", NULL},
    {NULL},
};

static PyTypeObject MappingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pmem_advisor.probes._pmembw.Mapping",
    .tp_basicsize = sizeof(Mapping),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Mapping(path, size=0): a file or devdax device mapped for measuring",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Mapping_init,
    .tp_dealloc = (destructor)Mapping_dealloc,
    .tp_methods = Mapping_methods,
    .tp_getset = Mapping_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pmembw", "pmem-advisor native bandwidth and latency kernel", -1,
    NULL,
};

PyMODINIT_FUNC PyInit__pmembw(void)
{
    pick_isa();
    if (PyType_Ready(&MappingType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&MappingType);
    if (PyModule_AddObject(m, "Mapping", (PyObject *)&MappingType) < 0) {
        Py_DECREF(&MappingType);
        Py_DECREF(m);
        return NULL;
    }
#ifdef HAVE_LIBPMEM
    PyModule_AddIntConstant(m, "HAVE_LIBPMEM", 1);
#else
    PyModule_AddIntConstant(m, "HAVE_LIBPMEM", 0);
#endif
    PyModule_AddStringConstant(m, "ISA", g_isa);
    return m;
}
