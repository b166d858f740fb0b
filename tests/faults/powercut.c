/* powercut.c — cut a data directory back to what a ledger says was durable.
 *
 *   powercut --ledger FILE --root DIR [--boot-id-file F]
 *
 * Run after the recorded process (LD_PRELOAD libfelix_faults.so) was SIGKILLed.
 * Every regular file under DIR is identified by (dev, inode), so renames are
 * followed. A file with a "sync" record is truncated to the size of its LAST
 * sync record if it is now larger; a file with none was never synced and is
 * removed. With --boot-id-file, a new random boot id is written to F.
 * Exit 0 on success, 1 on an error, 2 on a usage error. See README.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct entry {
    unsigned long long dev, ino;
    long long size;
    int used;
};

static struct entry *tab;
static size_t tab_cap, tab_len;

static size_t slot(unsigned long long dev, unsigned long long ino)
{
    unsigned long long h = (dev * 0x9E3779B97F4A7C15ULL) ^ (ino * 0xC2B2AE3D27D4EB4FULL);
    h ^= h >> 29;
    return (size_t)(h & (tab_cap - 1));
}

static struct entry *lookup(unsigned long long dev, unsigned long long ino)
{
    if (tab_cap == 0)
        return NULL;
    for (size_t i = slot(dev, ino), n = 0; n < tab_cap; i = (i + 1) & (tab_cap - 1), n++) {
        if (!tab[i].used)
            return NULL;
        if (tab[i].dev == dev && tab[i].ino == ino)
            return &tab[i];
    }
    return NULL;
}

static void put(unsigned long long dev, unsigned long long ino, long long size);

static void grow(void)
{
    struct entry *old = tab;
    size_t old_cap = tab_cap;
    tab_cap = old_cap ? old_cap * 2 : 1024;
    tab = calloc(tab_cap, sizeof *tab);
    if (tab == NULL) {
        fprintf(stderr, "powercut: out of memory\n");
        exit(1);
    }
    tab_len = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].used)
            put(old[i].dev, old[i].ino, old[i].size);
    free(old);
}

static void put(unsigned long long dev, unsigned long long ino, long long size)
{
    if ((tab_len + 1) * 2 > tab_cap)
        grow();
    for (size_t i = slot(dev, ino), n = 0; n < tab_cap; i = (i + 1) & (tab_cap - 1), n++) {
        if (!tab[i].used) {
            tab[i] = (struct entry){dev, ino, size, 1};
            tab_len++;
            return;
        }
        if (tab[i].dev == dev && tab[i].ino == ino) {
            tab[i].size = size; /* the LAST sync counts */
            return;
        }
    }
}

struct file {
    char *path;
    unsigned long long dev, ino;
    long long size;
};

static struct file *files;
static size_t nfiles, files_cap;

static int walk_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    if (nfiles == files_cap) {
        files_cap = files_cap ? files_cap * 2 : 256;
        files = realloc(files, files_cap * sizeof *files);
        if (files == NULL) {
            fprintf(stderr, "powercut: out of memory\n");
            exit(1);
        }
    }
    files[nfiles].path = strdup(path);
    if (files[nfiles].path == NULL) {
        fprintf(stderr, "powercut: out of memory\n");
        exit(1);
    }
    files[nfiles].dev = (unsigned long long)st->st_dev;
    files[nfiles].ino = (unsigned long long)st->st_ino;
    files[nfiles].size = (long long)st->st_size;
    nfiles++;
    return 0;
}

static int read_ledger(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "powercut: cannot open ledger %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[512];
    unsigned long lineno = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') {
            fprintf(stderr, "powercut: %s:%lu: incomplete record ignored\n", path, lineno);
            continue;
        }
        unsigned long long dev, ino;
        long long size;
        char tail;
        if (strncmp(line, "sync ", 5) == 0) {
            if (sscanf(line, "sync %llu %llu %lld%c", &dev, &ino, &size, &tail) == 4 &&
                tail == '\n' && size >= 0)
                put(dev, ino, size);
            else
                fprintf(stderr, "powercut: %s:%lu: malformed record ignored\n", path, lineno);
        }
        /* dirsync, syncfs, syncall, fail: informational (see README.md). */
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        fprintf(stderr, "powercut: error reading ledger %s\n", path);
        return -1;
    }
    return 0;
}

static int new_boot_id(const char *path)
{
    unsigned char b[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, b, sizeof b) != (ssize_t)sizeof b) {
        fprintf(stderr, "powercut: cannot read /dev/urandom\n");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "powercut: cannot write boot id file %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
            b[13], b[14], b[15]);
    if (fclose(f) != 0) {
        fprintf(stderr, "powercut: cannot write boot id file %s\n", path);
        return -1;
    }
    printf("new boot id in %s\n", path);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: powercut --ledger FILE --root DIR [--boot-id-file F]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *ledger = NULL, *root = NULL, *boot = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--ledger") == 0)
            ledger = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--root") == 0)
            root = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--boot-id-file") == 0)
            boot = argv[++i];
        else
            usage();
    }
    if (ledger == NULL || root == NULL)
        usage();
    struct stat rst;
    if (stat(root, &rst) != 0 || !S_ISDIR(rst.st_mode)) {
        fprintf(stderr, "powercut: %s is not a directory\n", root);
        return 1;
    }
    if (read_ledger(ledger) != 0)
        return 1;
    if (nftw(root, walk_cb, 16, FTW_PHYS) != 0) {
        fprintf(stderr, "powercut: cannot walk %s: %s\n", root, strerror(errno));
        return 1;
    }
    unsigned long cut = 0, removed = 0;
    int rc = 0;
    for (size_t i = 0; i < nfiles; i++) {
        struct file *fl = &files[i];
        struct entry *e = lookup(fl->dev, fl->ino);
        if (e == NULL) {
            if (unlink(fl->path) != 0 && errno != ENOENT) {
                fprintf(stderr, "powercut: cannot remove %s: %s\n", fl->path, strerror(errno));
                rc = 1;
                continue;
            }
            printf("removed %s\n", fl->path);
            removed++;
        } else if (fl->size > e->size) {
            if (truncate(fl->path, (off_t)e->size) != 0) {
                fprintf(stderr, "powercut: cannot truncate %s: %s\n", fl->path, strerror(errno));
                rc = 1;
                continue;
            }
            printf("cut %s from %lld to %lld\n", fl->path, fl->size, e->size);
            cut++;
        }
    }
    if (boot != NULL && new_boot_id(boot) != 0)
        rc = 1;
    printf("powercut: %lu files cut, %lu removed\n", cut, removed);
    return rc;
}
