/* felix_faults.c — LD_PRELOAD sync recorder for power-cut tests (DESIGN.md §6).
 *
 * Wraps libc fsync, fdatasync, syncfs and sync. With FELIX_FAULTS_LEDGER=path set,
 * every successful sync appends ledger records, each with ONE write() to the
 * ledger opened O_APPEND, so a SIGKILL never leaves half a record:
 *
 *   sync <dev> <ino> <size>\n     fsync/fdatasync of a regular file; size is
 *                                 fstat st_size taken just before the sync
 *   dirsync <dev> <ino>\n         fsync/fdatasync of a directory
 *   syncfs <dev>\n                syncfs (preceded by sync/dirsync records for
 *                                 every entry on <dev> under FELIX_FAULTS_ROOT)
 *   syncall\n                     sync() (preceded likewise, for every device)
 *   fail <call> <dev> <ino>\n     a sync made to fail by FELIX_FAULTS_FAIL_SYNC_IF
 *   slow <call> <dev> <ino>\n     a sync held back by FELIX_FAULTS_SLOW_SYNC_IF (then it runs)
 *
 * With FELIX_FAULTS_FAIL_SYNC_IF=path set, while that path exists every wrapped
 * sync returns -1 with errno EIO (sync() cannot fail; it just records "fail").
 * With FELIX_FAULTS_ENOSPC_IF=path set, while that path exists pwrite() on a
 * regular file fails with ENOSPC (a full disk; restore-point tests use it);
 * FELIX_FAULTS_ENOSPC_MIN=N spares writes shorter than N bytes (a pid file).
 * With FELIX_FAULTS_FILE_RULES=path set, while that file exists each of its
 * lines "OP ERRNO PATTERN" fails the open, write, fsync or rename of every file
 * whose absolute path matches the fnmatch(3) PATTERN with ERRNO (one chosen
 * file's fault, e.g. "write ENOSPC *.generations.tmp"), recorded as
 * "failfile OP ERRNO PATH".
 * See tests/faults/README.md.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "faults.h"

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_syncfs)(int);
static void (*real_sync)(void);
ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
int (*real_openat)(int, const char *, int, ...);
ssize_t (*real_write)(int, const void *, size_t);
int (*real_renameat)(int, const char *, int, const char *);
int (*real_unlinkat)(int, const char *, int);
int (*real_mkdirat)(int, const char *, mode_t);
int (*real_linkat)(int, const char *, int, const char *, int);
int (*real_ftruncate)(int, off_t);
int (*real_truncate)(const char *, off_t);
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* Set while this library itself opens, reads or writes (the rules file, the
 * ledger, the keep area): those calls pass straight through. */
__thread int faults_busy;

static void resolve(void)
{
    real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    real_syncfs = (int (*)(int))dlsym(RTLD_NEXT, "syncfs");
    real_sync = (void (*)(void))dlsym(RTLD_NEXT, "sync");
    real_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    real_renameat = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
    real_unlinkat = (int (*)(int, const char *, int))dlsym(RTLD_NEXT, "unlinkat");
    real_mkdirat = (int (*)(int, const char *, mode_t))dlsym(RTLD_NEXT, "mkdirat");
    real_linkat = (int (*)(int, const char *, int, const char *, int))dlsym(RTLD_NEXT, "linkat");
    real_ftruncate = (int (*)(int, off_t))dlsym(RTLD_NEXT, "ftruncate");
    real_truncate = (int (*)(const char *, off_t))dlsym(RTLD_NEXT, "truncate");
}

void faults_resolve(void)
{
    pthread_once(&once, resolve);
}

long long faults_ledger_pos(void)
{
    const char *ledger = getenv("FELIX_FAULTS_LEDGER");
    struct stat st;
    int saved = errno;
    long long pos = ledger != NULL && *ledger != '\0' && stat(ledger, &st) == 0 ? (long long)st.st_size : 0;
    errno = saved;
    return pos;
}

/* Appends one record with one write(); errno is preserved. */
void faults_record(const char *fmt, ...)
{
    const char *ledger = getenv("FELIX_FAULTS_LEDGER");
    if (ledger == NULL || *ledger == '\0')
        return;
    int saved = errno;
    char buf[PATH_CAP + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof buf) {
        faults_busy++;
        int fd = open(ledger, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            ssize_t w = write(fd, buf, (size_t)n);
            (void)w;
            close(fd);
        }
        faults_busy--;
    }
    errno = saved;
}

/* ---- one chosen file's faults: FELIX_FAULTS_FILE_RULES ---- */

static const struct {
    const char *name;
    int no;
} errno_names[] = {{"EIO", EIO},       {"ENOSPC", ENOSPC}, {"EMFILE", EMFILE}, {"ENFILE", ENFILE},
                   {"EACCES", EACCES}, {"EROFS", EROFS},   {"EDQUOT", EDQUOT}};

static int errno_of(const char *name)
{
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
        if (strcmp(errno_names[i].name, name) == 0)
            return errno_names[i].no;
    return EIO; /* an unknown name still fails: a typo must not pass silently */
}

static const char *name_of(int no)
{
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
        if (errno_names[i].no == no)
            return errno_names[i].name;
    return "EIO";
}

/* The absolute path of name relative to dirfd, or (name NULL) of fd. */
void faults_path_of(int dirfd, const char *name, int fd, char *out, size_t cap)
{
    char base[PATH_CAP] = "";
    if (name != NULL && name[0] == '/') {
        snprintf(out, cap, "%s", name);
        return;
    }
    int which = name != NULL ? dirfd : fd;
    if (which == AT_FDCWD) {
        if (getcwd(base, sizeof base) == NULL)
            base[0] = '\0';
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", which);
        ssize_t n = readlink(link, base, sizeof base - 1);
        base[n > 0 ? n : 0] = '\0';
    }
    if (name != NULL)
        snprintf(out, cap, "%s/%s", base, name);
    else
        snprintf(out, cap, "%s", base);
}

/* Reads the rules file into buf (NUL-terminated, at most cap - 1 bytes) with
 * open/read only: no stdio, no malloc, so it is safe where the wrapped call
 * is (a signal handler's write). False when the file is absent. */
static int read_rules(const char *rules, char *buf, size_t cap)
{
    int fd = real_openat ? real_openat(AT_FDCWD, rules, O_RDONLY | O_CLOEXEC, 0) : -1;
    if (fd < 0)
        return 0;
    size_t got = 0;
    ssize_t n;
    while (got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    buf[got] = '\0';
    return 1;
}

#define FAULT_SLOW (-2) /* a rule "fsync SLOW PATTERN": that file's syncs wait (file_fault_after_wait) */

/* The errno the rules give OP on the file (dirfd, name) or fd, 0 for none. A
 * rules file that is absent means no faults; it is read again on every call,
 * so a test switches a fault on and off while the process runs. A write or
 * fsync is judged only on a regular file or a directory: sockets and pipes
 * (libuv's signal pipe, written from a handler) pass without a look. */
static int file_fault(const char *op, int dirfd, const char *name, int fd)
{
    const char *rules = getenv("FELIX_FAULTS_FILE_RULES");
    if (rules == NULL || *rules == '\0' || faults_busy)
        return 0;
    int saved = errno, result = 0;
    struct stat st;
    if (name == NULL && (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))) {
        errno = saved;
        return 0;
    }
    faults_busy++;
    char text[8192], path[PATH_CAP] = "";
    char *save = NULL;
    for (char *line = read_rules(rules, text, sizeof text) ? strtok_r(text, "\n", &save) : NULL;
         line != NULL && result == 0; line = strtok_r(NULL, "\n", &save)) {
        char o[16], e[16], pat[PATH_CAP];
        if (sscanf(line, "%15s %15s %4351s", o, e, pat) != 3 || o[0] == '#' || strcmp(o, op) != 0)
            continue;
        int slow = strcmp(e, "SLOW") == 0;
        if (slow && strcmp(op, "fsync") != 0)
            continue; /* only a sync can be slow */
        if (path[0] == '\0')
            faults_path_of(dirfd, name, fd, path, sizeof path);
        if (fnmatch(pat, path, 0) == 0)
            result = slow ? FAULT_SLOW : errno_of(e);
    }
    faults_busy--;
    if (result > 0)
        faults_record("failfile %s %s %s\n", op, name_of(result), path);
    errno = saved;
    return result;
}

static int failing(void)
{
    const char *p = getenv("FELIX_FAULTS_FAIL_SYNC_IF");
    if (p == NULL || *p == '\0')
        return 0;
    int saved = errno;
    int r = access(p, F_OK) == 0;
    errno = saved;
    return r;
}

static long slow_sync_ms(void)
{
    const char *ms = getenv("FELIX_FAULTS_SLOW_SYNC_MS");
    return ms && *ms ? strtol(ms, NULL, 10) : 1000;
}

/* A slow disk: while FELIX_FAULTS_SLOW_SYNC_IF names an existing path, each
 * fsync/fdatasync waits up to FELIX_FAULTS_SLOW_SYNC_MS (default 1000) before
 * it runs, in 50 ms steps, so removing the path ends the wait at once; it records
 * "slow" when it starts waiting. */
static void slow_down(const char *name, int have, const struct stat *st)
{
    const char *p = getenv("FELIX_FAULTS_SLOW_SYNC_IF");
    if (p == NULL || *p == '\0')
        return;
    int saved = errno;
    if (access(p, F_OK) == 0) /* recorded before the wait, so a test sees a sync that is still held back */
        faults_record("slow %s %llu %llu\n", name, have ? (unsigned long long)st->st_dev : 0ull,
               have ? (unsigned long long)st->st_ino : 0ull);
    for (long t = 0, total = slow_sync_ms(); t < total && access(p, F_OK) == 0; t += 50) {
        struct timespec step = {0, 50 * 1000000L};
        nanosleep(&step, NULL);
    }
    errno = saved;
}

/* One slow file: while a rule "fsync SLOW PATTERN" matches the file, its
 * fsync/fdatasync waits, up to FELIX_FAULTS_SLOW_SYNC_MS, in 50 ms steps with
 * the rules read again at each (removing the line ends the wait at once); it
 * records "slow" when it starts waiting. Returns what the other rules say. */
static int file_fault_after_wait(int fd, const char *name, int have, const struct stat *st)
{
    int ff = file_fault("fsync", -1, NULL, fd);
    if (ff == FAULT_SLOW)
        faults_record("slow %s %llu %llu\n", name, have ? (unsigned long long)st->st_dev : 0ull,
               have ? (unsigned long long)st->st_ino : 0ull);
    for (long t = 0, total = slow_sync_ms(); ff == FAULT_SLOW && t < total; t += 50) {
        struct timespec step = {0, 50 * 1000000L};
        nanosleep(&step, NULL);
        ff = file_fault("fsync", -1, NULL, fd);
    }
    return ff == FAULT_SLOW ? 0 : ff;
}

/* pos: the ledger's size when the sync started (-1: the record's own place),
 * so a record written meanwhile by another thread is not vouched for. */
static void record_entry(const struct stat *st, long long pos)
{
    char at[32] = "";
    if (pos >= 0)
        snprintf(at, sizeof at, " @%lld", pos);
    if (S_ISREG(st->st_mode))
        faults_record("sync %llu %llu %lld%s\n", (unsigned long long)st->st_dev,
               (unsigned long long)st->st_ino, (long long)st->st_size, at);
    else if (S_ISDIR(st->st_mode))
        faults_record("dirsync %llu %llu%s\n", (unsigned long long)st->st_dev,
               (unsigned long long)st->st_ino, at);
}

static int do_fdsync(int fd, int (*real)(int), const char *name)
{
    pthread_once(&once, resolve);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    struct stat st;
    int have = fstat(fd, &st) == 0; /* the size before any wait: bytes written meanwhile are not vouched for */
    slow_down(name, have, &st);
    int ff = file_fault_after_wait(fd, name, have, &st);
    if (ff != 0) {
        errno = ff;
        return -1;
    }
    if (failing()) {
        if (have)
            faults_record("fail %s %llu %llu\n", name, (unsigned long long)st.st_dev,
                   (unsigned long long)st.st_ino);
        else
            faults_record("fail %s 0 0\n", name);
        errno = EIO;
        return -1;
    }
    long long pos = faults_ledger_pos();
    int r = real(fd);
    if (r == 0 && have)
        record_entry(&st, pos);
    return r;
}

int fsync(int fd)
{
    pthread_once(&once, resolve);
    return do_fdsync(fd, real_fsync, "fsync");
}

int fdatasync(int fd)
{
    pthread_once(&once, resolve);
    return do_fdsync(fd, real_fdatasync, "fdatasync");
}

/* nftw has no user argument: the device being synced (or all) for the walk. */
static pthread_mutex_t walk_lock = PTHREAD_MUTEX_INITIALIZER;
static dev_t walk_dev;
static int walk_all;

static int walk_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (flag == FTW_F || flag == FTW_D || flag == FTW_DP)
        if (walk_all || st->st_dev == walk_dev)
            record_entry(st, -1);
    return 0;
}

static void walk_root(dev_t dev, int all)
{
    const char *root = getenv("FELIX_FAULTS_ROOT");
    const char *ledger = getenv("FELIX_FAULTS_LEDGER");
    if (root == NULL || *root == '\0' || ledger == NULL || *ledger == '\0')
        return;
    int saved = errno;
    pthread_mutex_lock(&walk_lock);
    walk_dev = dev;
    walk_all = all;
    nftw(root, walk_cb, 16, FTW_PHYS);
    pthread_mutex_unlock(&walk_lock);
    errno = saved;
}

int syncfs(int fd)
{
    pthread_once(&once, resolve);
    if (real_syncfs == NULL) {
        errno = ENOSYS;
        return -1;
    }
    struct stat st;
    int have = fstat(fd, &st) == 0;
    if (failing()) {
        faults_record("fail syncfs %llu 0\n", have ? (unsigned long long)st.st_dev : 0ULL);
        errno = EIO;
        return -1;
    }
    /* Everything on the device at the moment syncfs starts is made durable:
     * sizes are taken by a walk before the real call (conservative). */
    if (have)
        walk_root(st.st_dev, 0);
    int r = real_syncfs(fd);
    if (r == 0 && have)
        faults_record("syncfs %llu\n", (unsigned long long)st.st_dev);
    return r;
}

void sync(void)
{
    pthread_once(&once, resolve);
    if (failing()) {
        faults_record("fail sync 0 0\n");
        return;
    }
    walk_root(0, 1);
    if (real_sync != NULL)
        real_sync();
    faults_record("syncall\n");
}

/* A full disk for regular files while FELIX_FAULTS_ENOSPC_IF exists. */
static int disk_full(int fd, size_t n)
{
    const char *min = getenv("FELIX_FAULTS_ENOSPC_MIN");
    if (min != NULL && *min != '\0' && n < (size_t)strtoul(min, NULL, 10))
        return 0;
    const char *p = getenv("FELIX_FAULTS_ENOSPC_IF");
    if (p == NULL || *p == '\0')
        return 0;
    int saved = errno;
    struct stat st;
    int r = access(p, F_OK) == 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    errno = saved;
    return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t at)
{
    pthread_once(&once, resolve);
    if (disk_full(fd, n)) {
        errno = ENOSPC;
        return -1;
    }
    int ff = file_fault("write", -1, NULL, fd);
    if (ff != 0) {
        errno = ff;
        return -1;
    }
    undo_before_write(fd, at, n, 1);
    return real_pwrite ? real_pwrite(fd, buf, n, at) : (errno = ENOSYS, -1);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t at)
{
    return pwrite(fd, buf, n, at);
}

/* open, write and rename, for FELIX_FAULTS_FILE_RULES. */
static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define MODE_OF(flags, mode)                                                                       \
    do {                                                                                           \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode = mode_arg(flags, ap);                                                                \
        va_end(ap);                                                                                \
    } while (0)

static int injected(int ff)
{
    errno = ff;
    return -1;
}

/* open(name) is openat(AT_FDCWD, name): all four enter here. A name it
 * creates, and the bytes O_TRUNC throws away, are recorded for the undo. */
static int open_checked(int dirfd, const char *name, int flags, mode_t mode)
{
    pthread_once(&once, resolve);
    int ff = file_fault("open", dirfd, name, -1);
    if (ff != 0)
        return injected(ff);
    if (real_openat == NULL)
        return injected(ENOSYS);
    struct undo_name u = {0};
    if (flags & (O_CREAT | O_TRUNC))
        undo_before_name(dirfd, name, &u);
    char shrink[256] = "";
    if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && u.existed && S_ISREG(u.old.st_mode))
        undo_before_shrink(-1, u.path, 0, shrink, sizeof shrink);
    int fd = real_openat(dirfd, name, flags, mode);
    undo_after_shrink(shrink, fd >= 0);
    if (fd >= 0 && (flags & O_CREAT))
        undo_after_create(&u, fd, "create");
    return fd;
}

int openat(int dirfd, const char *name, int flags, ...)
{
    mode_t mode;
    MODE_OF(flags, mode);
    return open_checked(dirfd, name, flags, mode);
}

int openat64(int dirfd, const char *name, int flags, ...)
{
    mode_t mode;
    MODE_OF(flags, mode);
    return open_checked(dirfd, name, flags, mode);
}

int open(const char *name, int flags, ...)
{
    mode_t mode;
    MODE_OF(flags, mode);
    return open_checked(AT_FDCWD, name, flags, mode);
}

int open64(const char *name, int flags, ...)
{
    mode_t mode;
    MODE_OF(flags, mode);
    return open_checked(AT_FDCWD, name, flags, mode);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    pthread_once(&once, resolve);
    int ff = file_fault("write", -1, NULL, fd);
    if (ff != 0)
        return injected(ff);
    undo_before_write(fd, 0, n, 0);
    return real_write ? real_write(fd, buf, n) : injected(ENOSYS);
}

/* rename(from, to) is renameat(AT_FDCWD, from, AT_FDCWD, to). */
int renameat(int olddir, const char *from, int newdir, const char *to)
{
    pthread_once(&once, resolve);
    int ff = file_fault("rename", olddir, from, -1);
    if (ff == 0)
        ff = file_fault("rename", newdir, to, -1);
    if (ff != 0)
        return injected(ff);
    if (real_renameat == NULL)
        return injected(ENOSYS);
    struct undo_name src, dst;
    undo_before_rename(olddir, from, newdir, to, &src, &dst);
    int r = real_renameat(olddir, from, newdir, to);
    undo_after_rename(&src, &dst, r == 0);
    return r;
}

int rename(const char *from, const char *to)
{
    return renameat(AT_FDCWD, from, AT_FDCWD, to);
}

/* ---- names and sizes a power cut can undo (undo.c) ---- */

int unlinkat(int dirfd, const char *name, int flags)
{
    pthread_once(&once, resolve);
    if (real_unlinkat == NULL)
        return injected(ENOSYS);
    struct undo_name u;
    undo_before_name(dirfd, name, &u);
    if (!(flags & AT_REMOVEDIR))
        undo_keep_before_unlink(&u);
    int r = real_unlinkat(dirfd, name, flags);
    undo_after_unlink(&u, r == 0, (flags & AT_REMOVEDIR) != 0);
    return r;
}

int unlink(const char *name)
{
    return unlinkat(AT_FDCWD, name, 0);
}

/* glibc's remove() calls unlinkat internally (no PLT): wrap it like glibc does it. */
int remove(const char *name)
{
    if (unlinkat(AT_FDCWD, name, 0) == 0)
        return 0;
    if (errno != EISDIR)
        return -1;
    return unlinkat(AT_FDCWD, name, AT_REMOVEDIR);
}

int rmdir(const char *name)
{
    return unlinkat(AT_FDCWD, name, AT_REMOVEDIR);
}

int mkdirat(int dirfd, const char *name, mode_t mode)
{
    pthread_once(&once, resolve);
    if (real_mkdirat == NULL)
        return injected(ENOSYS);
    struct undo_name u;
    undo_before_name(dirfd, name, &u);
    int r = real_mkdirat(dirfd, name, mode);
    if (r == 0)
        undo_after_create(&u, -1, "mkdir");
    return r;
}

int mkdir(const char *name, mode_t mode)
{
    return mkdirat(AT_FDCWD, name, mode);
}

int linkat(int olddir, const char *from, int newdir, const char *to, int flags)
{
    pthread_once(&once, resolve);
    if (real_linkat == NULL)
        return injected(ENOSYS);
    struct undo_name u;
    undo_before_name(newdir, to, &u);
    int r = real_linkat(olddir, from, newdir, to, flags);
    if (r == 0)
        undo_after_create(&u, -1, "link");
    return r;
}

int link(const char *from, const char *to)
{
    return linkat(AT_FDCWD, from, AT_FDCWD, to, 0);
}

int ftruncate(int fd, off_t to)
{
    pthread_once(&once, resolve);
    if (real_ftruncate == NULL)
        return injected(ENOSYS);
    char shrink[256] = "";
    undo_before_shrink(fd, NULL, to, shrink, sizeof shrink);
    int r = real_ftruncate(fd, to);
    undo_after_shrink(shrink, r == 0);
    return r;
}

int ftruncate64(int fd, off_t to)
{
    return ftruncate(fd, to);
}

int truncate(const char *path, off_t to)
{
    pthread_once(&once, resolve);
    if (real_truncate == NULL)
        return injected(ENOSYS);
    char shrink[256] = "";
    undo_before_shrink(-1, path, to, shrink, sizeof shrink);
    int r = real_truncate(path, to);
    undo_after_shrink(shrink, r == 0);
    return r;
}

int truncate64(const char *path, off_t to)
{
    return truncate(path, to);
}
