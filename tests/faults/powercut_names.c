/* powercut_names.c — undo the directory entries a power cut can lose.
 *
 * A create, link, mkdir, rename, unlink or rmdir is durable only once its
 * directory (both directories, for a rename) was synced after it: a dirsync
 * record whose position is past the operation's record. The others are undone
 * in reverse ledger order, so each undo finds the names as they were right
 * after its operation. In the worst case (no --seed) every one is undone; with
 * a seed, the journal reached a random point: operations recorded before it
 * stay, those after it are undone.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "powercut.h"

/* Directories by (dev, ino) -> index into dir_paths; re-made ones by alias. */
static struct map dirs, aliases;
static char **dir_paths;
static size_t ndir_paths;

static int dir_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_D)
        return 0;
    char *copy = strdup(path);
    char **grown = realloc(dir_paths, (ndir_paths + 1) * sizeof *dir_paths);
    if (copy == NULL || grown == NULL) {
        fprintf(stderr, "powercut: out of memory\n");
        exit(1);
    }
    dir_paths = grown;
    dir_paths[ndir_paths] = copy;
    map_put(&dirs, (ull)st->st_dev, (ull)st->st_ino)->a = (long long)ndir_paths++;
    return 0;
}

static int dirs_rebuild(const char *root)
{
    for (size_t i = 0; i < ndir_paths; i++)
        free(dir_paths[i]);
    ndir_paths = 0;
    free(dirs.tab);
    dirs = (struct map){0};
    return nftw(root, dir_cb, 16, FTW_PHYS);
}

/* The path of life `gen` of directory inode ino: a directory made again by
 * an undone rmdir, or the one there now if it is that life. */
static const char *dir_path(const struct ledger *lg, ull dev, ull ino, int gen)
{
    struct map_entry *al = map_get(&aliases, life_key(dev, gen), ino);
    if (al != NULL)
        ino = (ull)al->a;
    else if (gen != dir_life(lg, dev, ino))
        return NULL; /* that life of the inode is gone */
    struct map_entry *e = map_get(&dirs, dev, ino);
    return e != NULL ? dir_paths[e->a] : NULL;
}

static int durable_in(const struct ledger *lg, ull dev, ull dir, int gen, long long at)
{
    struct map_entry *e = map_get(&lg->dirsyncs, life_key(dev, gen), dir);
    return e != NULL && e->a > at;
}

static int durable(const struct ledger *lg, const struct op *o)
{
    if (o->kind == OP_RENAME)
        return durable_in(lg, o->dev, o->dir, o->gen, o->at) && durable_in(lg, o->dev, o->dir2, o->gen2, o->at);
    return durable_in(lg, o->dev, o->dir, o->gen, o->at);
}

static int is_name_op(const struct op *o)
{
    return o->kind != OP_OVERWRITE && o->kind != OP_SHRINK;
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) != 0 && errno != ENOENT ? -1 : 0;
}

int remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* The entry DIR/NAME, if it names the inode ino now. */
static int names(const char *path, ull dev, ull ino, struct stat *st)
{
    return lstat(path, st) == 0 && (ull)st->st_dev == dev && (ull)st->st_ino == ino;
}

/* nftw has no user argument: the file searched for, and where it was found. */
static ull find_dev, find_ino;
static char found_at[8192];

static int find_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F || (ull)st->st_dev != find_dev || (ull)st->st_ino != find_ino)
        return 0;
    snprintf(found_at, sizeof found_at, "%s", path);
    return 1;
}

/* Links the file (dev, ino) at path again: from the keep area, or (a file
 * that had another name when it lost this one) from that name. */
static int give_back(const char *root, const char *keep, ull dev, ull ino, const char *path)
{
    char from[8192];
    snprintf(from, sizeof from, "%s/%llu.%llu", keep, dev, ino);
    if (link(from, path) == 0)
        return 0;
    find_dev = dev, find_ino = ino, found_at[0] = '\0';
    if (errno == ENOENT && nftw(root, find_cb, 16, FTW_PHYS) == 1 && link(found_at, path) == 0)
        return 0;
    fprintf(stderr, "powercut: cannot give %s back its file (%s: %s)\n", path, from, strerror(errno));
    return -1;
}

/* Undoes one operation; 1 if something changed, 0 if nothing was left to
 * undo, -1 on an error. */
static int undo_one(const struct ledger *lg, const struct op *o, const char *root, const char *keep)
{
    const char *d = dir_path(lg, o->dev, o->dir, o->gen);
    if (d == NULL)
        return 0; /* its directory went with an undone mkdir */
    char path[8192], other[8192];
    snprintf(path, sizeof path, "%s/%s", d, o->name);
    struct stat st;
    switch (o->kind) {
    case OP_CREATE:
    case OP_LINK:
    case OP_MKDIR:
        if (!names(path, o->dev, o->ino, &st))
            return 0;
        if (S_ISDIR(st.st_mode) ? remove_tree(path) != 0 : unlink(path) != 0)
            return -1;
        printf("undone %s %s\n", o->kind == OP_MKDIR ? "mkdir" : o->kind == OP_LINK ? "link" : "create", path);
        return S_ISDIR(st.st_mode) && dirs_rebuild(root) != 0 ? -1 : 1;
    case OP_UNLINK:
        if (lstat(path, &st) == 0)
            return 0; /* the name holds a file a durable operation put there */
        if (give_back(root, keep, o->dev, o->ino, path) != 0)
            return -1;
        printf("undone unlink %s\n", path);
        return 1;
    case OP_RMDIR:
        if (lstat(path, &st) == 0)
            return 0;
        if (mkdir(path, 0755) != 0 || lstat(path, &st) != 0)
            return -1;
        map_put(&aliases, life_key(o->dev, o->gen2), o->ino)->a = (long long)st.st_ino;
        printf("undone rmdir %s\n", path);
        return dirs_rebuild(root) != 0 ? -1 : 1;
    case OP_RENAME: {
        const char *d2 = dir_path(lg, o->dev, o->dir2, o->gen2);
        if (d2 == NULL)
            return 0;
        snprintf(other, sizeof other, "%s/%s", d2, o->name2);
        if (!names(other, o->dev, o->ino, &st))
            return 0;
        if (rename(other, path) != 0)
            return -1;
        if (o->rino != 0 && give_back(root, keep, o->dev, o->rino, other) != 0)
            return -1;
        printf("undone rename %s back to %s\n", other, path);
        return S_ISDIR(st.st_mode) && dirs_rebuild(root) != 0 ? -1 : 1;
    }
    default:
        return 0;
    }
}

long long undo_names(const struct ledger *lg, const char *root, const char *keep, struct chooser *c)
{
    long long first = -1;
    for (size_t i = 0; i < lg->nops; i++)
        if (is_name_op(&lg->ops[i]) && !durable(lg, &lg->ops[i])) {
            first = lg->ops[i].at;
            break;
        }
    if (first < 0)
        return 0;
    /* The journal's reach: operations recorded before it are on disk. */
    long long reach = choose_range(c, first, lg->end);
    if (dirs_rebuild(root) != 0) {
        fprintf(stderr, "powercut: cannot walk %s: %s\n", root, strerror(errno));
        return -1;
    }
    long long undone = 0;
    for (size_t i = lg->nops; i-- > 0;) {
        const struct op *o = &lg->ops[i];
        if (!is_name_op(o) || durable(lg, o) || o->at < reach)
            continue;
        int r = undo_one(lg, o, root, keep);
        if (r < 0) {
            fprintf(stderr, "powercut: cannot undo %s in %s: %s\n", o->name, root, strerror(errno));
            return -1;
        }
        undone += r;
    }
    return undone;
}
