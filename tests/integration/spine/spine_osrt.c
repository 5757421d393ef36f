/* spine_osrt.c - failing and timed-out OS calls; prints "name ret errno" lines that must be
 * identical with and without the agent. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void on_alarm(int sig) { (void)sig; }

static void show(const char *name, long ret, int err) { printf("%s ret=%ld errno=%d\n", name, ret, err); }

static struct timespec abs_in_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

int main(void)
{
    errno = 0;
    int fd = open("/nonexistent/profagent/file", O_RDONLY);
    show("open", fd, errno);

    struct pollfd p = {.fd = 1000, .events = POLLIN};
    errno = 0;
    int r = poll(&p, 1, 10);
    show("poll_badfd", r, errno);
    printf("poll_badfd revents=%d\n", p.revents);

    errno = 0;
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(1000, &rs);
    struct timeval tv = {0, 1000};
    r = select(1001, &rs, NULL, NULL, &tv);
    show("select_badfd", r, errno);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: the sleep is interrupted */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 100000}};
    setitimer(ITIMER_REAL, &it, NULL);
    struct timespec req = {5, 0}, rem = {0, 0};
    errno = 0;
    r = nanosleep(&req, &rem);
    show("nanosleep_interrupted", r, errno);
    printf("nanosleep_interrupted rem_ge_4s=%d\n", rem.tv_sec >= 4);

    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_lock(&m);
    struct timespec dl = abs_in_ms(50);
    errno = 0;
    r = pthread_cond_timedwait(&c, &m, &dl);
    show("pthread_cond_timedwait", r, errno);
    pthread_mutex_unlock(&m);

    sem_t s;
    sem_init(&s, 0, 0);
    dl = abs_in_ms(20);
    errno = 0;
    r = sem_timedwait(&s, &dl);
    show("sem_timedwait", r, errno);

    errno = 0;
    r = clock_nanosleep(CLOCK_MONOTONIC, 0, &(struct timespec){0, -1}, NULL);
    show("clock_nanosleep_einval", r, errno);

    errno = 0;
    r = usleep(2000);
    show("usleep", r, errno);
    return 0;
}
