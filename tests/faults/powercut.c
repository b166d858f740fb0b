/* powercut.c — cut a data directory back to what a ledger says was durable.
 *
 *   powercut --ledger FILE --root DIR [--boot-id-file F] [--seed N]
 *
 * Run after the recorded process (LD_PRELOAD libfelix_faults.so) was SIGKILLed.
 * First the directory entries no directory sync made durable are undone
 * (powercut_names.c). Then every regular file under DIR, identified by (dev,
 * inode) so renames are followed, loses what its last sync did not cover:
 * overwrites in place since are reverted, truncations since come back longer,
 * and the unsynced tail goes; a file with no sync record and no recorded
 * creation is removed. Without --seed every choice is the worst case (all
 * undone, the tail cut at the synced size); with --seed N the cut is one a
 * disk could leave: the tail goes from a random page boundary, each page of
 * an overwrite and each truncation is reverted or not, the directory journal
 * reached a random point. See README.md. Exit 0, 1 on an error, 2 on usage.
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

#include "powercut.h"

#define PAGE 4096LL

static void oom(void)
{
    fprintf(stderr, "powercut: out of memory\n");
    exit(1);
}

/* ---- (dev, ino) maps ---- */

static size_t slot(const struct map *m, ull dev, ull ino)
{
    ull h = (dev * 0x9E3779B97F4A7C15ULL) ^ (ino * 0xC2B2AE3D27D4EB4FULL);
    h ^= h >> 29;
    return (size_t)(h & (m->cap - 1));
}

struct map_entry *map_get(const struct map *m, ull dev, ull ino)
{
    if (m->cap == 0)
        return NULL;
    for (size_t i = slot(m, dev, ino), n = 0; n < m->cap; i = (i + 1) & (m->cap - 1), n++) {
        if (!m->tab[i].used)
            return NULL;
        if (m->tab[i].dev == dev && m->tab[i].ino == ino)
            return &m->tab[i];
    }
    return NULL;
}

static void map_grow(struct map *m)
{
    struct map old = *m;
    m->cap = old.cap ? old.cap * 2 : 1024;
    m->tab = calloc(m->cap, sizeof *m->tab);
    if (m->tab == NULL)
        oom();
    m->len = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.tab[i].used)
            *map_put(m, old.tab[i].dev, old.tab[i].ino) = old.tab[i];
    free(old.tab);
}

struct map_entry *map_put(struct map *m, ull dev, ull ino)
{
    struct map_entry *e = map_get(m, dev, ino);
    if (e != NULL)
        return e;
    if ((m->len + 1) * 2 > m->cap)
        map_grow(m);
    size_t i = slot(m, dev, ino);
    while (m->tab[i].used)
        i = (i + 1) & (m->cap - 1);
    m->tab[i] = (struct map_entry){dev, ino, 0, 0, 0, 1};
    m->len++;
    return &m->tab[i];
}

/* ---- seeded choices (xorshift64*) ---- */

static ull next(struct chooser *c)
{
    c->state ^= c->state >> 12;
    c->state ^= c->state << 25;
    c->state ^= c->state >> 27;
    return c->state * 0x2545F4914F6CDD1DULL;
}

int choose(struct chooser *c, int one_in)
{
    return !c->seeded || next(c) % (ull)one_in == 0;
}

long long choose_range(struct chooser *c, long long lo, long long hi)
{
    return !c->seeded || hi <= lo ? lo : lo + (long long)(next(c) % (ull)(hi - lo + 1));
}

/* ---- the ledger ---- */

static char *unescape(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    if (out == NULL)
        oom();
    for (; *s; s++) {
        unsigned v;
        if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1) {
            *o++ = (char)v;
            s += 2;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

static struct op *new_op(struct ledger *lg, enum op_kind kind, long long at)
{
    if (lg->nops == lg->cap) {
        lg->cap = lg->cap ? lg->cap * 2 : 256;
        lg->ops = realloc(lg->ops, lg->cap * sizeof *lg->ops);
        if (lg->ops == NULL)
            oom();
    }
    struct op *o = &lg->ops[lg->nops++];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->at = at;
    return o;
}

/* "@POS" after a sync: the position the sync vouches for; else its own. */
static long long vouched(const char *rest, long long at)
{
    long long pos;
    return sscanf(rest, " @%lld", &pos) == 1 ? pos : at;
}

static int parse_name_op(struct ledger *lg, const char *line, long long at)
{
    static const struct {
        const char *word;
        enum op_kind kind;
    } kinds[] = {{"create", OP_CREATE}, {"mkdir", OP_MKDIR}, {"link", OP_LINK},
                 {"unlink", OP_UNLINK}, {"rmdir", OP_RMDIR}};
    char word[16], name[8192], name2[8192], keep[256];
    ull dev, dir, ino, dir2, rino;
    long long a, b, koff, saved;
    if (sscanf(line, "%15s", word) != 1)
        return -1;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (strcmp(word, kinds[k].word) != 0)
            continue;
        if (sscanf(line, "%*s %llu %llu %llu %8191s", &dev, &dir, &ino, name) != 4)
            return -1;
        struct op *o = new_op(lg, kinds[k].kind, at);
        o->dev = dev, o->dir = dir, o->ino = ino, o->name = unescape(name);
        o->gen = dir_life(lg, dev, dir);
        if (o->kind == OP_RMDIR)
            o->gen2 = dir_life(lg, dev, ino); /* the life of the directory removed */
        if (o->kind == OP_CREATE || o->kind == OP_MKDIR)
            map_put(&lg->born, dev, ino)->a = at; /* a new life of the inode */
        if (o->kind == OP_MKDIR)
            map_put(&lg->lives, dev, ino)->a++;
        return 0;
    }
    if (strcmp(word, "rename") == 0) {
        if (sscanf(line, "rename %llu %llu %8191s %llu %8191s %llu %llu", &dev, &dir, name, &dir2,
                   name2, &ino, &rino) != 7)
            return -1;
        struct op *o = new_op(lg, OP_RENAME, at);
        o->dev = dev, o->dir = dir, o->ino = ino, o->dir2 = dir2, o->rino = rino;
        o->name = unescape(name), o->name2 = unescape(name2);
        o->gen = dir_life(lg, dev, dir), o->gen2 = dir_life(lg, dev, dir2);
        return 0;
    }
    int over = strcmp(word, "overwrite") == 0;
    if (over || strcmp(word, "shrink") == 0) {
        int n = over ? sscanf(line, "overwrite %llu %llu %lld %lld %255s %lld", &dev, &ino, &a, &b, keep, &koff)
                     : sscanf(line, "shrink %llu %llu %lld %lld %255s %lld %lld", &dev, &ino, &a, &b, keep, &koff, &saved);
        if (n != (over ? 6 : 7))
            return -1;
        struct op *o = new_op(lg, over ? OP_OVERWRITE : OP_SHRINK, at);
        o->dev = dev, o->ino = ino, o->off = a, o->len = b, o->koff = koff;
        o->saved = over ? b : saved;
        o->keep = strdup(keep);
        return 0;
    }
    return 1; /* fail, slow, syncfs, failfile ...: informational */
}

static int keep_failures;

int dir_life(const struct ledger *lg, ull dev, ull ino)
{
    struct map_entry *e = map_get(&lg->lives, dev, ino);
    return e != NULL ? (int)e->a : 0;
}

static int parse_line(struct ledger *lg, const char *line, long long at)
{
    if (strncmp(line, "keepfail ", 9) == 0) {
        fprintf(stderr, "powercut: the recorder could not keep a file (%s): its undo is impossible\n", line);
        keep_failures++;
        return 0;
    }
    ull dev, ino;
    long long size;
    int used = 0;
    if (strncmp(line, "sync ", 5) == 0) {
        if (sscanf(line, "sync %llu %llu %lld%n", &dev, &ino, &size, &used) != 3 || size < 0)
            return -1;
        struct map_entry *e = map_put(&lg->syncs, dev, ino);
        e->a = size; /* the LAST sync counts */
        e->b = vouched(line + used, at);
        e->c = at;
        return 0;
    }
    if (strncmp(line, "dirsync ", 8) == 0) {
        if (sscanf(line, "dirsync %llu %llu%n", &dev, &ino, &used) != 2)
            return -1;
        struct map_entry *e = map_put(&lg->dirsyncs, life_key(dev, dir_life(lg, dev, ino)), ino);
        long long pos = vouched(line + used, at);
        if (pos > e->a)
            e->a = pos;
        return 0;
    }
    return parse_name_op(lg, line, at) < 0 ? -1 : 0;
}

static int read_ledger(const char *path, struct ledger *lg)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "powercut: cannot open ledger %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[20000];
    unsigned long lineno = 0;
    long long at = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        size_t len = strlen(line);
        long long this_at = at;
        at += (long long)len;
        if (len == 0 || line[len - 1] != '\n') {
            fprintf(stderr, "powercut: %s:%lu: incomplete record ignored\n", path, lineno);
            continue;
        }
        line[len - 1] = '\0';
        if (parse_line(lg, line, this_at) != 0)
            fprintf(stderr, "powercut: %s:%lu: malformed record ignored\n", path, lineno);
    }
    lg->end = at;
    int err = ferror(f);
    fclose(f);
    if (err) {
        fprintf(stderr, "powercut: error reading ledger %s\n", path);
        return -1;
    }
    return 0;
}

/* ---- the data of each file ---- */

struct file {
    char *path;
    ull dev, ino;
};
static struct file *files;
static size_t nfiles, files_cap;

static int file_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    static struct map seen; /* a file with several names is cut once */
    struct map_entry *e = map_put(&seen, (ull)st->st_dev, (ull)st->st_ino);
    if (e->a++ > 0)
        return 0;
    if (nfiles == files_cap) {
        files_cap = files_cap ? files_cap * 2 : 256;
        files = realloc(files, files_cap * sizeof *files);
        if (files == NULL)
            oom();
    }
    files[nfiles].path = strdup(path);
    if (files[nfiles].path == NULL)
        oom();
    files[nfiles].dev = (ull)st->st_dev;
    files[nfiles].ino = (ull)st->st_ino;
    nfiles++;
    return 0;
}

struct counts {
    unsigned long cut, removed, overwrites, shrinks;
};

/* Copies LEN kept bytes to fd at OFF, never past `limit`. */
static int put_back(const char *keep, const struct op *o, int fd, long long off, long long len,
                    long long limit)
{
    if (off + len > limit)
        len = limit - off;
    if (len <= 0)
        return 0;
    char path[8192], buf[65536];
    snprintf(path, sizeof path, "%s/%s", keep, o->keep);
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        fprintf(stderr, "powercut: cannot read kept bytes %s: %s\n", path, strerror(errno));
        return -1;
    }
    long long from = o->koff + (off - (o->kind == OP_OVERWRITE ? o->off : o->len)), done = 0;
    int rc = 0;
    while (rc == 0 && done < len) {
        size_t want = len - done < (long long)sizeof buf ? (size_t)(len - done) : sizeof buf;
        ssize_t n = pread(in, buf, want, (off_t)(from + done));
        if (n <= 0 || pwrite(fd, buf, (size_t)n, (off_t)(off + done)) != n)
            rc = -1;
        else
            done += n;
    }
    close(in);
    return rc;
}

/* Reverts an overwrite page by page (worst case: every page), never past the
 * file's end now. */
static int revert_overwrite(const char *keep, const struct op *o, int fd, struct chooser *c, int *did)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    long long end = o->off + o->saved;
    for (long long p = o->off; p < end;) {
        long long q = (p / PAGE + 1) * PAGE < end ? (p / PAGE + 1) * PAGE : end;
        if (choose(c, 2)) {
            if (put_back(keep, o, fd, p, q - p, (long long)st.st_size) != 0)
                return -1;
            *did = 1;
        }
        p = q;
    }
    return 0;
}

/* Handles the events since the file's last sync, newest first; returns the
 * size a sync vouched for after the truncations that stay. */
static long long undo_events(const struct ledger *lg, const struct file *fl, int fd, long long synced,
                             long long since, const char *keep, struct chooser *c, struct counts *n)
{
    long long durable = synced;
    for (size_t i = lg->nops; i-- > 0;) {
        const struct op *o = &lg->ops[i];
        if (o->at < since || o->dev != fl->dev || o->ino != fl->ino)
            continue;
        int did = 0;
        if (o->kind == OP_OVERWRITE) {
            if (revert_overwrite(keep, o, fd, c, &did) != 0)
                return -1;
            n->overwrites += (unsigned long)did;
        } else if (o->kind == OP_SHRINK) {
            if (!choose(c, 2)) {
                durable = o->len < durable ? o->len : durable; /* the truncation reached the disk */
                continue;
            }
            long long to = o->len, back = o->off < synced ? o->off : synced;
            if (back > to && put_back(keep, o, fd, to, back - to, to + o->saved) != 0)
                return -1;
            if (back > to) {
                printf("reverted truncation of %s: %lld bytes back\n", fl->path, back - to);
                n->shrinks++;
            }
        }
    }
    return durable;
}

static int cut_file(const struct ledger *lg, const struct file *fl, const char *keep, struct chooser *c,
                    struct counts *n)
{
    struct map_entry *s = map_get(&lg->syncs, fl->dev, fl->ino);
    struct map_entry *born = map_get(&lg->born, fl->dev, fl->ino);
    if (s != NULL && born != NULL && s->c < born->a)
        s = NULL; /* that sync was of an earlier file with the same inode number */
    if (s == NULL && born == NULL) {
        if (unlink(fl->path) != 0 && errno != ENOENT)
            return -1;
        printf("removed %s\n", fl->path);
        n->removed++;
        return 0;
    }
    /* never synced but its name is durable: its data is not */
    long long synced = s ? s->a : 0, since = s ? s->b : -1;
    if (born != NULL && born->a > since)
        since = born->a; /* events before its creation were an earlier file's */
    int fd = open(fl->path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    unsigned long before = n->overwrites;
    long long durable = undo_events(lg, fl, fd, synced, since, keep, c, n);
    struct stat st;
    int rc = durable < 0 || fstat(fd, &st) != 0 ? -1 : 0;
    if (rc == 0 && n->overwrites > before)
        printf("reverted %lu overwrites of %s\n", n->overwrites - before, fl->path);
    if (rc == 0 && st.st_size > durable) {
        /* the tail is lost from a page boundary at or after the synced size */
        long long first = (durable + PAGE - 1) / PAGE * PAGE;
        long long pages = first < st.st_size ? (st.st_size - first) / PAGE + 1 : 0;
        long long k = choose_range(c, -1, pages); /* -1: exactly the synced size */
        long long keep_to = k < 0 ? durable : first + k * PAGE < st.st_size ? first + k * PAGE : st.st_size;
        if (keep_to < st.st_size) {
            rc = ftruncate(fd, (off_t)keep_to);
            if (rc == 0) {
                printf("cut %s from %lld to %lld\n", fl->path, (long long)st.st_size, keep_to);
                n->cut++;
            }
        }
    }
    close(fd);
    return rc;
}

/* ---- the rest ---- */

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
    fprintf(stderr, "usage: powercut --ledger FILE --root DIR [--boot-id-file F] [--seed N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *ledger = NULL, *root = NULL, *boot = NULL;
    struct chooser c = {0, 0};
    for (int i = 1; i < argc; i++) {
        char *end;
        if (i + 1 < argc && strcmp(argv[i], "--ledger") == 0)
            ledger = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--root") == 0)
            root = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--boot-id-file") == 0)
            boot = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
            c.state = strtoull(argv[++i], &end, 10);
            if (*end != '\0' || c.state == 0) {
                fprintf(stderr, "powercut: --seed %s: not a positive integer\n", argv[i]);
                exit(2);
            }
            c.seeded = 1;
        } else
            usage();
    }
    if (ledger == NULL || root == NULL)
        usage();
    struct stat rst;
    if (stat(root, &rst) != 0 || !S_ISDIR(rst.st_mode)) {
        fprintf(stderr, "powercut: %s is not a directory\n", root);
        return 1;
    }
    struct ledger lg = {0};
    if (read_ledger(ledger, &lg) != 0)
        return 1;
    char keep[8192];
    snprintf(keep, sizeof keep, "%s.keep", ledger);
    if (keep_failures > 0)
        return 1;
    long long names = undo_names(&lg, root, keep, &c);
    if (names < 0)
        return 1;
    if (nftw(root, file_cb, 16, FTW_PHYS) != 0) {
        fprintf(stderr, "powercut: cannot walk %s: %s\n", root, strerror(errno));
        return 1;
    }
    struct counts n = {0};
    int rc = 0;
    for (size_t i = 0; i < nfiles; i++)
        if (cut_file(&lg, &files[i], keep, &c, &n) != 0) {
            fprintf(stderr, "powercut: cannot cut %s: %s\n", files[i].path, strerror(errno));
            rc = 1;
        }
    if (rc == 0 && remove_tree(keep) != 0) {
        fprintf(stderr, "powercut: cannot remove %s: %s\n", keep, strerror(errno));
        rc = 1;
    }
    if (boot != NULL && new_boot_id(boot) != 0)
        rc = 1;
    printf("powercut: %lu files cut, %lu removed\n", n.cut, n.removed);
    printf("powercut: %lld entries undone, %lu overwrites and %lu truncations reverted (%s)\n", names,
           n.overwrites, n.shrinks, c.seeded ? "seeded" : "worst case");
    return rc;
}
