/* faults.h — what the two halves of libfelix_faults.so share: the sync and
 * fault wrappers (felix_faults.c) and the record of what a power cut can undo
 * (undo.c: names, overwrites, truncations). See README.md. */
#ifndef FELIX_FAULTS_H
#define FELIX_FAULTS_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PATH_CAP 4352

/* The real libc functions, resolved once by faults_resolve(). */
extern int (*real_openat)(int, const char *, int, ...);
extern ssize_t (*real_write)(int, const void *, size_t);
extern ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
extern int (*real_renameat)(int, const char *, int, const char *);
extern int (*real_unlinkat)(int, const char *, int);
extern int (*real_mkdirat)(int, const char *, mode_t);
extern int (*real_linkat)(int, const char *, int, const char *, int);
extern int (*real_ftruncate)(int, off_t);
extern int (*real_truncate)(const char *, off_t);
void faults_resolve(void);

/* Set while the library itself does file work: its own calls pass through. */
extern __thread int faults_busy;

/* Appends one ledger record with one write(); errno is preserved. */
void faults_record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The ledger's size now: a sync started at this position vouches for the
 * records before it only (written into its record as "@POS"). */
long long faults_ledger_pos(void);
/* The absolute path of name relative to dirfd, or (name NULL) of fd. */
void faults_path_of(int dirfd, const char *name, int fd, char *out, size_t cap);

/* undo.c: hooks around the wrapped calls. Each before_* takes what the undo
 * needs (the old bytes, a link to a file about to lose its name) and each
 * after_* writes the record once the call succeeded. */
struct undo_name {
    int active;          /* under FELIX_FAULTS_ROOT, with a ledger */
    int existed;         /* the name existed before the call */
    int kept;            /* a link to its old file was made in the keep area */
    struct stat old;     /* the old file (existed) */
    unsigned long long dirdev, dirino; /* its directory */
    char path[PATH_CAP]; /* absolute */
    char base[PATH_CAP]; /* the name in its directory, %XX-escaped */
};
void undo_before_name(int dirfd, const char *name, struct undo_name *u);
void undo_after_create(const struct undo_name *u, int fd, const char *what);
void undo_keep_before_unlink(struct undo_name *u);
void undo_after_unlink(struct undo_name *u, int ok, int dir);
void undo_before_rename(int od, const char *from, int nd, const char *to, struct undo_name *src,
                        struct undo_name *dst);
void undo_after_rename(const struct undo_name *src, struct undo_name *dst, int ok);
void undo_before_write(int fd, off_t at, size_t n, int positioned);
void undo_before_shrink(int fd, const char *path, off_t to, char *rec, size_t cap);
void undo_after_shrink(const char *rec, int ok);

#endif
