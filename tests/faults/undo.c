/* undo.c — what a power cut can undo besides an unsynced tail, recorded so
 * that powercut can undo it (README.md "Ledger format"):
 *
 *   create|mkdir|link DEV DIRINO INO NAME      a new name in directory DIRINO
 *   unlink|rmdir DEV DIRINO INO NAME           a name removed
 *   rename DEV ODIRINO ONAME NDIRINO NNAME INO RINO   (RINO: the file it replaced, or 0)
 *   overwrite DEV INO OFF LEN KEEPFILE KEEPOFF   bytes [OFF, OFF+LEN) overwritten in place
 *   shrink DEV INO FROM TO KEEPFILE KEEPOFF SAVED   a truncation from FROM to TO bytes
 *
 * Only names and files under FELIX_FAULTS_ROOT are recorded. A file about to
 * lose its last name (unlink, or replaced by a rename) gets a hard link
 * LEDGER.keep/DEV.INO first, so powercut can give it back its name with its
 * own (dev, inode) and therefore its own sync records; that link also keeps
 * the inode from being reused during the run. Old bytes of an overwrite or a
 * truncation are appended to LEDGER.keep/bytes.PID.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults.h"

/* Bytes saved per overwrite or truncation; beyond, powercut can revert only
 * the first SAVE_CAP bytes (README.md says so). */
#define SAVE_CAP (64LL << 20)

static pthread_once_t root_once = PTHREAD_ONCE_INIT;
static char root_real[PATH_MAX];

static void resolve_root(void)
{
    const char *root = getenv("FELIX_FAULTS_ROOT");
    if (root == NULL || *root == '\0' || realpath(root, root_real) == NULL)
        root_real[0] = '\0';
}

static int recording(void)
{
    const char *ledger = getenv("FELIX_FAULTS_LEDGER");
    if (faults_busy || ledger == NULL || *ledger == '\0')
        return 0;
    pthread_once(&root_once, resolve_root);
    return root_real[0] != '\0';
}

/* A real path is under the root (the root itself included). */
static int under_root(const char *real)
{
    size_t n = strlen(root_real);
    return strncmp(real, root_real, n) == 0 && (real[n] == '\0' || real[n] == '/');
}

static void escape(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 4 < cap; p++) {
        if (*p <= ' ' || *p == '%' || *p >= 0x7f)
            o += (size_t)snprintf(out + o, cap - o, "%%%02X", *p);
        else
            out[o++] = (char)*p;
    }
    out[o] = '\0';
}

static void keep_dir(char *out, size_t cap)
{
    snprintf(out, cap, "%s.keep", getenv("FELIX_FAULTS_LEDGER"));
    if (real_mkdirat != NULL)
        real_mkdirat(AT_FDCWD, out, 0755); /* EEXIST is the usual answer */
}

void undo_before_name(int dirfd, const char *name, struct undo_name *u)
{
    memset(u, 0, sizeof *u);
    if (!recording())
        return;
    int saved = errno;
    faults_busy++;
    faults_path_of(dirfd, name, -1, u->path, sizeof u->path);
    char parent[PATH_CAP], real[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", u->path);
    char *slash = strrchr(parent, '/');
    struct stat dst;
    if (slash != NULL && slash[1] != '\0') {
        escape(slash + 1, u->base, sizeof u->base);
        *slash = '\0';
        if (realpath(parent[0] ? parent : "/", real) != NULL && under_root(real) &&
            stat(real, &dst) == 0) {
            u->active = 1;
            u->dirdev = (unsigned long long)dst.st_dev;
            u->dirino = (unsigned long long)dst.st_ino;
            u->existed = lstat(u->path, &u->old) == 0;
        }
    }
    faults_busy--;
    errno = saved;
}

/* Where the keep area holds the file u named: LEDGER.keep/DEV.INO. */
static void keep_path(const struct undo_name *u, char *out, size_t cap)
{
    char dir[PATH_CAP];
    keep_dir(dir, sizeof dir);
    snprintf(out, cap, "%s/%llu.%llu", dir, (unsigned long long)u->old.st_dev,
             (unsigned long long)u->old.st_ino);
}

/* Links the regular file u names into the keep area before it loses its
 * LAST name. A file with another name stays alive under it (powercut finds
 * it there), and no link is added: Felix reads st_nlink > 1 as "a restore
 * point shares this segment". */
static void keep_link(struct undo_name *u)
{
    if (!u->active || !u->existed || !S_ISREG(u->old.st_mode) || u->old.st_nlink != 1 || real_linkat == NULL)
        return;
    char to[PATH_CAP + 64];
    keep_path(u, to, sizeof to);
    struct stat ks;
    if (real_linkat(AT_FDCWD, u->path, AT_FDCWD, to, 0) == 0)
        u->kept = 1; /* made here: removed again if the call fails */
    else if (errno == EEXIST && stat(to, &ks) == 0 && ks.st_ino == u->old.st_ino && ks.st_dev == u->old.st_dev)
        ; /* kept already, when an earlier name of it went */
    else
        faults_record("keepfail %llu %llu %d\n", (unsigned long long)u->old.st_dev,
                      (unsigned long long)u->old.st_ino, errno);
}

static void unkeep(const struct undo_name *u)
{
    if (!u->kept || real_unlinkat == NULL)
        return;
    char to[PATH_CAP + 64];
    keep_path(u, to, sizeof to);
    real_unlinkat(AT_FDCWD, to, 0);
}

void undo_after_create(const struct undo_name *u, int fd, const char *what)
{
    if (!u->active || u->existed)
        return;
    int saved = errno;
    struct stat st;
    if ((fd >= 0 ? fstat(fd, &st) : lstat(u->path, &st)) == 0)
        faults_record("%s %llu %llu %llu %s\n", what, u->dirdev, u->dirino,
                      (unsigned long long)st.st_ino, u->base);
    errno = saved;
}

void undo_after_unlink(struct undo_name *u, int ok, int dir)
{
    if (!u->active || !u->existed)
        return;
    int saved = errno;
    if (ok)
        faults_record("%s %llu %llu %llu %s\n", dir ? "rmdir" : "unlink", u->dirdev, u->dirino,
                      (unsigned long long)u->old.st_ino, u->base);
    else
        unkeep(u);
    errno = saved;
}

void undo_keep_before_unlink(struct undo_name *u)
{
    int saved = errno;
    faults_busy++;
    keep_link(u);
    faults_busy--;
    errno = saved;
}

void undo_before_rename(int od, const char *from, int nd, const char *to, struct undo_name *src,
                        struct undo_name *dst)
{
    undo_before_name(od, from, src);
    undo_before_name(nd, to, dst);
    if (!src->active || !dst->active || !src->existed)
        return;
    if (dst->existed && dst->old.st_dev == src->old.st_dev && dst->old.st_ino == src->old.st_ino)
        return; /* renaming a file onto another name of itself changes nothing */
    int saved = errno;
    faults_busy++;
    keep_link(dst);
    faults_busy--;
    errno = saved;
}

void undo_after_rename(const struct undo_name *src, struct undo_name *dst, int ok)
{
    if (!src->active || !dst->active || !src->existed)
        return;
    int saved = errno;
    if (ok)
        faults_record("rename %llu %llu %s %llu %s %llu %llu\n", src->dirdev, src->dirino,
                      src->base, dst->dirino, dst->base, (unsigned long long)src->old.st_ino,
                      dst->existed && S_ISREG(dst->old.st_mode) ? (unsigned long long)dst->old.st_ino : 0ULL);
    else
        unkeep(dst);
    errno = saved;
}

/* Appends LEN bytes of fd from AT to the keep area; sets *koff to where. */
static pthread_mutex_t bytes_lock = PTHREAD_MUTEX_INITIALIZER;

static long long save_bytes(int fd, off_t at, long long len, char *name, size_t cap,
                            long long *koff)
{
    char dir[PATH_CAP], path[PATH_CAP + 64];
    keep_dir(dir, sizeof dir);
    snprintf(name, cap, "bytes.%ld", (long)getpid());
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (len > SAVE_CAP)
        len = SAVE_CAP;
    pthread_mutex_lock(&bytes_lock);
    int out = real_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    struct stat st;
    long long saved = 0;
    /* pread fails on an O_WRONLY descriptor: read the file through another */
    int in = fd, fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_ACCMODE) == O_WRONLY) {
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        in = real_openat(AT_FDCWD, self, O_RDONLY | O_CLOEXEC);
    }
    if (out >= 0 && in >= 0 && fstat(out, &st) == 0) {
        *koff = (long long)st.st_size;
        char buf[65536];
        while (saved < len) {
            size_t want = len - saved < (long long)sizeof buf ? (size_t)(len - saved) : sizeof buf;
            ssize_t n = pread(in, buf, want, at + (off_t)saved);
            if (n <= 0 || real_write(out, buf, (size_t)n) != n)
                break;
            saved += n;
        }
    }
    if (out >= 0)
        close(out);
    if (in >= 0 && in != fd)
        close(in);
    pthread_mutex_unlock(&bytes_lock);
    return saved;
}

/* The file fd is, if it is a regular file under the root. */
static int file_under_root(int fd, struct stat *st)
{
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))
        return 0;
    char path[PATH_CAP], real[PATH_MAX];
    faults_path_of(-1, NULL, fd, path, sizeof path);
    return realpath(path, real) != NULL && under_root(real);
}

void undo_before_write(int fd, off_t at, size_t n, int positioned)
{
    if (n == 0 || !recording())
        return;
    int saved = errno;
    faults_busy++;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if (!positioned) {
            int fl = fcntl(fd, F_GETFL);
            at = fl >= 0 && !(fl & O_APPEND) ? lseek(fd, 0, SEEK_CUR) : st.st_size;
        }
        if (at >= 0 && at < st.st_size && file_under_root(fd, &st)) {
            long long len = (long long)n < st.st_size - at ? (long long)n : st.st_size - at, koff = 0;
            char name[64];
            long long want = len;
            len = save_bytes(fd, at, len, name, sizeof name, &koff);
            if (len < want)
                faults_record("keepfail %llu %llu %d\n", (unsigned long long)st.st_dev,
                              (unsigned long long)st.st_ino, EIO);
            faults_record("overwrite %llu %llu %lld %lld %s %lld\n", (unsigned long long)st.st_dev,
                          (unsigned long long)st.st_ino, (long long)at, len, name, koff);
        }
    }
    faults_busy--;
    errno = saved;
}

void undo_after_shrink(const char *rec, int ok)
{
    if (ok && rec[0] != '\0')
        faults_record("%s", rec);
}

void undo_before_shrink(int fd, const char *path, off_t to, char *rec, size_t cap)
{
    if (!recording())
        return;
    int saved = errno;
    faults_busy++;
    int own = fd < 0;
    if (own)
        fd = real_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd >= 0 && file_under_root(fd, &st) && to < st.st_size) {
        long long koff = 0;
        char name[64];
        long long want = (long long)(st.st_size - to);
        long long got = save_bytes(fd, to, want, name, sizeof name, &koff);
        if (got < (want < SAVE_CAP ? want : SAVE_CAP))
            faults_record("keepfail %llu %llu %d\n", (unsigned long long)st.st_dev,
                          (unsigned long long)st.st_ino, EIO);
        snprintf(rec, cap, "shrink %llu %llu %lld %lld %s %lld %lld\n", (unsigned long long)st.st_dev,
                      (unsigned long long)st.st_ino, (long long)st.st_size, (long long)to, name,
                      koff, got);
    }
    if (own && fd >= 0)
        close(fd);
    faults_busy--;
    errno = saved;
}
