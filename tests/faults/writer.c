/* writer.c — tiny scripted file writer for the power-cut tests (t4000).
 *
 *   writer OP...
 *
 * OPs run in order on one "current" file descriptor:
 *   open PATH        open (create) PATH read-write; it becomes current
 *   write N          append N bytes ('a'..'z' repeating) to the current file
 *   fsync | fdatasync | syncfs
 *                    sync the current file; prints "<op>: ok" or "<op>: <strerror>"
 *   thread-fsync     fsync the current file from a second thread (joined)
 *   dirsync DIR      fsync the directory DIR
 *   rename A B       rename(2)
 *   unlink P | mkdir P | rmdir P | remove P | link A B
 *                    unlink(2), mkdir(2), rmdir(2), remove(3), link(2)
 *   nlink            print "nlink: N", the current file's st_nlink
 *   overwrite OFF N  pwrite N bytes 'X' at OFF in the current file
 *   truncate N       ftruncate the current file to N bytes
 *   close            close the current file
 *   spin THREADS N   THREADS threads each do N times: append 1 byte, fsync
 *   ready            print "ready" and flush stdout
 *   pause SECONDS    sleep up to SECONDS (waiting for SIGKILL), then continue
 * Exit 0, or 1 on a failed open/write/rename/close, 2 on a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cur = -1;

static void die(const char *what)
{
    fprintf(stderr, "writer: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void append(int fd, long n)
{
    char buf[4096];
    if (lseek(fd, 0, SEEK_END) < 0)
        die("lseek");
    while (n > 0) {
        size_t k = n > (long)sizeof buf ? sizeof buf : (size_t)n;
        for (size_t i = 0; i < k; i++)
            buf[i] = (char)('a' + i % 26);
        ssize_t w = write(fd, buf, k);
        if (w <= 0)
            die("write");
        n -= w;
    }
}

static void report(const char *op, int r)
{
    printf("%s: %s\n", op, r == 0 ? "ok" : strerror(errno));
    fflush(stdout);
}

static void *thread_fsync(void *arg)
{
    int *r = arg;
    *r = fsync(cur) == 0 ? 0 : errno;
    return NULL;
}

static long spin_n;
static pthread_mutex_t spin_lock = PTHREAD_MUTEX_INITIALIZER;

static void *spin(void *arg)
{
    (void)arg;
    for (long i = 0; i < spin_n; i++) {
        pthread_mutex_lock(&spin_lock);
        append(cur, 1);
        pthread_mutex_unlock(&spin_lock);
        fsync(cur);
    }
    return NULL;
}

static void need(int i, int k, int argc)
{
    if (i + k >= argc) {
        fprintf(stderr, "writer: missing argument\n");
        exit(2);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *op = argv[i];
        if (strcmp(op, "open") == 0) {
            need(i, 1, argc);
            cur = open(argv[++i], O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            if (cur < 0)
                die(argv[i]);
        } else if (strcmp(op, "write") == 0) {
            need(i, 1, argc);
            append(cur, atol(argv[++i]));
        } else if (strcmp(op, "fsync") == 0) {
            report(op, fsync(cur));
        } else if (strcmp(op, "fdatasync") == 0) {
            report(op, fdatasync(cur));
        } else if (strcmp(op, "syncfs") == 0) {
            report(op, syncfs(cur));
        } else if (strcmp(op, "thread-fsync") == 0) {
            pthread_t t;
            int r = 0;
            if (pthread_create(&t, NULL, thread_fsync, &r) != 0)
                die("pthread_create");
            pthread_join(t, NULL);
            errno = r;
            report(op, r == 0 ? 0 : -1);
        } else if (strcmp(op, "dirsync") == 0) {
            need(i, 1, argc);
            int d = open(argv[++i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (d < 0)
                die(argv[i]);
            report(op, fsync(d));
            close(d);
        } else if (strcmp(op, "rename") == 0) {
            need(i, 2, argc);
            if (rename(argv[i + 1], argv[i + 2]) != 0)
                die("rename");
            i += 2;
        } else if (strcmp(op, "unlink") == 0 || strcmp(op, "mkdir") == 0 || strcmp(op, "rmdir") == 0) {
            need(i, 1, argc);
            const char *p = argv[++i];
            int r = op[0] == 'u' ? unlink(p) : op[0] == 'm' ? mkdir(p, 0755) : rmdir(p);
            if (r != 0)
                die(op);
        } else if (strcmp(op, "remove") == 0) {
            need(i, 1, argc);
            if (remove(argv[++i]) != 0)
                die("remove");
        } else if (strcmp(op, "nlink") == 0) {
            struct stat st;
            if (fstat(cur, &st) != 0)
                die("fstat");
            printf("nlink: %lu\n", (unsigned long)st.st_nlink);
            fflush(stdout);
        } else if (strcmp(op, "link") == 0) {
            need(i, 2, argc);
            if (link(argv[i + 1], argv[i + 2]) != 0)
                die("link");
            i += 2;
        } else if (strcmp(op, "overwrite") == 0) {
            need(i, 2, argc);
            off_t at = (off_t)atol(argv[++i]);
            size_t n = (size_t)atol(argv[++i]);
            char buf[65536];
            if (n > sizeof buf)
                n = sizeof buf;
            memset(buf, 'X', n);
            if (pwrite(cur, buf, n, at) != (ssize_t)n)
                die("overwrite");
        } else if (strcmp(op, "truncate") == 0) {
            need(i, 1, argc);
            if (ftruncate(cur, (off_t)atol(argv[++i])) != 0)
                die("truncate");
        } else if (strcmp(op, "close") == 0) {
            if (close(cur) != 0)
                die("close");
            cur = -1;
        } else if (strcmp(op, "spin") == 0) {
            need(i, 2, argc);
            int nt = atoi(argv[++i]);
            spin_n = atol(argv[++i]);
            if (nt < 1 || nt > 64)
                nt = 1;
            pthread_t t[64];
            for (int k = 0; k < nt; k++)
                if (pthread_create(&t[k], NULL, spin, NULL) != 0)
                    die("pthread_create");
            for (int k = 0; k < nt; k++)
                pthread_join(t[k], NULL);
        } else if (strcmp(op, "ready") == 0) {
            printf("ready\n");
            fflush(stdout);
        } else if (strcmp(op, "pause") == 0) {
            need(i, 1, argc);
            sleep((unsigned)atoi(argv[++i]));
        } else {
            fprintf(stderr, "writer: unknown op %s\n", op);
            return 2;
        }
    }
    return 0;
}
