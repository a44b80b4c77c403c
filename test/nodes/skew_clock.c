/* LD_PRELOAD shim: this process's wall clock (CLOCK_REALTIME) runs SKEW_CLOCK_NS
 * nanoseconds ahead (or behind, if negative) of the machine's. Stands in for a second
 * host whose clock is off: rcutils' system time, Python's time.time() and DDS's
 * timestamps all read CLOCK_REALTIME through clock_gettime. Monotonic clocks are left
 * alone. Waits until an absolute CLOCK_REALTIME deadline (condition variables: DDS and
 * rcl wait sets) get the deadline shifted back, since the kernel judges it by the real
 * clock. Built by test/integration/test_clock_offset.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long long skew_ns;
static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
static int (*real_sem_timedwait)(sem_t *, const struct timespec *);

__attribute__((constructor)) static void skew_init(void) {
    const char *text = getenv("SKEW_CLOCK_NS");
    skew_ns = text ? atoll(text) : 0;
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    real_cond_timedwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))dlvsym(
        RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    if (!real_cond_timedwait)
        real_cond_timedwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))dlsym(
            RTLD_NEXT, "pthread_cond_timedwait");
    real_cond_clockwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))dlsym(
        RTLD_NEXT, "pthread_cond_clockwait");
    real_sem_timedwait = (int (*)(sem_t *, const struct timespec *))dlsym(RTLD_NEXT, "sem_timedwait");
}

static void shift_by(struct timespec *ts, long long by) {
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + by;
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

static void shift(struct timespec *ts) { shift_by(ts, skew_ns); }

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (!real_clock_gettime) skew_init();
    int result = real_clock_gettime(id, ts);
    if (result == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) shift(ts);
    return result;
}

int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    struct timespec ts;
    int result = clock_gettime(CLOCK_REALTIME, &ts);
    if (result == 0 && tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return result;
}

/* Deadlines computed from the skewed clock, judged by the kernel's real one. */
int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *abstime) {
    if (!real_cond_timedwait) skew_init();
    struct timespec real = *abstime;
    shift_by(&real, -skew_ns); /* libstdc++ and rcl use the default (CLOCK_REALTIME) condvar clock */
    return real_cond_timedwait(cond, mutex, &real);
}

int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t id, const struct timespec *abstime) {
    if (!real_cond_clockwait) skew_init();
    struct timespec real = *abstime;
    if (id == CLOCK_REALTIME) shift_by(&real, -skew_ns);
    return real_cond_clockwait(cond, mutex, id, &real);
}

int sem_timedwait(sem_t *sem, const struct timespec *abstime) {
    if (!real_sem_timedwait) skew_init();
    struct timespec real = *abstime;
    shift_by(&real, -skew_ns);
    return real_sem_timedwait(sem, &real);
}
