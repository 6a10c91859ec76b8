/*
 * tt_python: `/usr/bin/python3 ARGS` for the tests, run in a fork of
 * tests/pyserve.py, which has imported torch once (an import costs about
 * 1.3 s of CPU, and the suites run about a hundred PyTorch twins).
 *
 * The socket is $TT_PYSERVE (CTest sets it for every test); where nothing
 * listens there, tt_python starts the server (detached, its log in
 * $TT_PYSERVE.log) and waits until it listens.  Its fds 0-2, arguments,
 * working folder and environment go to the server, which answers with the
 * script's wait status; tt_python exits with it (or dies of its signal).
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to the script, and the
 * script is killed if tt_python dies.
 *
 * Anything else (TT_PYSERVE unset, TT_PYSERVE_OFF=1, a python3 option
 * other than -c or -, no server, one that refuses the request) and
 * tt_python execs /usr/bin/python3 ARGS itself: nothing depends on the
 * server.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"

extern char **environ;

static int server_fd = -1;

static void run_directly(char **argv)
{
    /* the twins' float64 GEMM on OpenBLAS (tests/twin_dgemm.c), as the
     * server loads it */
    const char *dgemm = getenv("TT_TWIN_DGEMM");
    if (dgemm && *dgemm && access(dgemm, R_OK) == 0) {
        const char *before = getenv("LD_PRELOAD");
        char preload[8192];
        int n = before && *before ? snprintf(preload, sizeof preload, "%s:%s", dgemm, before)
                                  : snprintf(preload, sizeof preload, "%s", dgemm);
        if (n > 0 && (size_t)n < sizeof preload) setenv("LD_PRELOAD", preload, 1);
    }
    argv[0] = PYTHON;
    execv(PYTHON, argv);
    fprintf(stderr, "tt_python: cannot run " PYTHON ": %s\n", strerror(errno));
    exit(127);
}

/* 1 for the forms the server runs: script [args], -c CODE [args], - [args]. */
static int servable(int argc, char **argv)
{
    if (argc < 2) return 0;
    if (strcmp(argv[1], "-c") == 0) return argc >= 3;
    return strcmp(argv[1], "-") == 0 || argv[1][0] != '-';
}

static int connect_to(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) return fd;
    close(fd);
    return -1;
}

/* Starts pyserve.py detached (its own session, fds 0-2 on /dev/null and the
 * log) and waits until it says it listens.  0 when it does. */
static int start_server(const char *path)
{
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(ready[0]);
        close(ready[1]);
        return -1;
    }
    if (pid == 0) {
        setsid();
        if (fork() != 0) _exit(0);
        char log[sizeof ((struct sockaddr_un *)0)->sun_path + 8];
        snprintf(log, sizeof log, "%s.log", path);
        int null = open("/dev/null", O_RDONLY);
        int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (null < 0 || out < 0) _exit(1);
        if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 || dup2(ready[1], 3) < 0)
            _exit(1);
        closefrom(4);
        /* torch reads these once, at import: each child applies its own */
        unsetenv("OMP_NUM_THREADS");
        unsetenv("MKL_NUM_THREADS");
        if (chdir("/") != 0) _exit(1);
        execl(PYTHON, PYTHON, TT_PYSERVE_SCRIPT, path, "3", (char *)NULL);
        _exit(127);
    }
    close(ready[1]);
    waitpid(pid, NULL, 0);
    char word[2] = {0};
    size_t got = 0;
    struct pollfd p = {.fd = ready[0], .events = POLLIN};
    while (got < sizeof word && poll(&p, 1, 120000) > 0) {
        ssize_t n = read(ready[0], word + got, sizeof word - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(ready[0]);
    return got == 2 && memcmp(word, "ok", 2) == 0 ? 0 : -1;
}

static int append(char **buf, size_t *used, size_t *size, const char *word)
{
    size_t n = strlen(word) + 1;
    if (*used + n > *size) {
        size_t grown = (*size + n) * 2;
        char *more = realloc(*buf, grown);
        if (!more) return -1;
        *buf = more;
        *size = grown;
    }
    memcpy(*buf + *used, word, n);
    *used += n;
    return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* "TTPY", a length, then NUL-ended: the argument count, the arguments, the
 * working folder, the environment; fds 0-2 ride on the header. */
static int send_request(int fd, int argc, char **argv)
{
    char *body = NULL, count[16], cwd[4096];
    size_t used = 0, size = 0;
    if (!getcwd(cwd, sizeof cwd)) return -1;
    snprintf(count, sizeof count, "%d", argc - 1);
    int bad = append(&body, &used, &size, count);
    for (int i = 1; i < argc && !bad; i++) bad = append(&body, &used, &size, argv[i]);
    if (!bad) bad = append(&body, &used, &size, cwd);
    for (char **e = environ; *e && !bad; e++) bad = append(&body, &used, &size, *e);
    if (bad || used > UINT32_MAX) {
        free(body);
        return -1;
    }
    char head[8] = {'T', 'T', 'P', 'Y', (char)(used >> 24), (char)(used >> 16), (char)(used >> 8),
                    (char)used};
    int fds[3] = {0, 1, 2};
    char control[CMSG_SPACE(sizeof fds)];
    memset(control, 0, sizeof control);
    struct iovec iov = {.iov_base = head, .iov_len = sizeof head};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    ssize_t sent;
    do sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    int rc = sent == (ssize_t)sizeof head ? write_all(fd, body, used) : -1;
    free(body);
    return rc;
}

static int read_all(int fd, unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void pass_on(int sig)
{
    unsigned char byte = (unsigned char)sig;
    int saved = errno;
    if (write(server_fd, &byte, 1) < 0) {
        /* the server is gone: the reply's read says so */
    }
    errno = saved;
}

int main(int argc, char **argv)
{
    const char *path = getenv("TT_PYSERVE"), *off = getenv("TT_PYSERVE_OFF");
    if (!servable(argc, argv) || !path || !*path || (off && *off && strcmp(off, "0") != 0) ||
        strlen(path) >= sizeof ((struct sockaddr_un *)0)->sun_path)
        run_directly(argv);
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0) run_directly(argv);
    int fd = connect_to(path);
    if (fd < 0 && start_server(path) == 0) fd = connect_to(path);
    if (fd < 0) run_directly(argv);
    unsigned char reply[5];
    if (send_request(fd, argc, argv) != 0 || read_all(fd, reply, 1) != 0 || reply[0] != 'S') {
        close(fd);  /* refused ('R'), or the request never ran */
        run_directly(argv);
    }
    server_fd = fd;
    struct sigaction sa = {.sa_handler = pass_on};
    sigemptyset(&sa.sa_mask);
    int passed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof passed / sizeof *passed; i++) sigaction(passed[i], &sa, NULL);
    if (read_all(fd, reply, 5) != 0 || reply[0] != 'X') {
        fprintf(stderr, "tt_python: the fork server ended before the script (its log: %s.log)\n",
                path);
        return 1;
    }
    int status = (int)((uint32_t)reply[1] << 24 | (uint32_t)reply[2] << 16 |
                       (uint32_t)reply[3] << 8 | reply[4]);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        return 128 + sig;
    }
    return 1;
}
