/* powercut.h — the ledger as powercut reads it, shared by powercut.c (the
 * data: tails, overwrites, truncations) and powercut_names.c (directory
 * entries). See README.md "What powercut does". */
#ifndef FELIX_POWERCUT_H
#define FELIX_POWERCUT_H

#include <stddef.h>

typedef unsigned long long ull;

/* (dev, ino) -> (a, b). */
struct map_entry {
    ull dev, ino;
    long long a, b, c;
    int used;
};
struct map {
    struct map_entry *tab;
    size_t cap, len;
};
struct map_entry *map_get(const struct map *m, ull dev, ull ino);
struct map_entry *map_put(struct map *m, ull dev, ull ino); /* found or new (a = b = 0) */

enum op_kind { OP_CREATE, OP_MKDIR, OP_LINK, OP_UNLINK, OP_RMDIR, OP_RENAME, OP_OVERWRITE, OP_SHRINK };

/* One name or data record, in ledger order. */
struct op {
    enum op_kind kind;
    long long at;       /* the record's byte offset in the ledger */
    ull dev, dir, ino;  /* name ops: the directory and the file */
    ull dir2, rino;     /* rename: the new directory, the file it replaced */
    int gen, gen2;      /* which life of the directory (dir, dir2; rmdir: of ino): mkdirs of its inode before */
    char *name, *name2; /* unescaped; rename: old, new */
    long long off, len; /* overwrite: range; shrink: from (off), to (len) */
    char *keep;         /* file in the keep area holding the old bytes */
    long long koff, saved;
};

/* An inode number can come back as another file or directory once freed:
 * a create or mkdir starts a new life. Files: a sync before the file's
 * latest create belongs to an earlier life. Directories: dirsyncs are kept
 * per life, keyed by life_key. */
struct ledger {
    struct map syncs;    /* file -> (last synced size, the position it vouches for, its record's position) */
    struct map dirsyncs; /* (directory, life) -> (latest position a sync vouches for) */
    struct map born;     /* files and directories created under this ledger -> (position of the latest create) */
    struct map lives;    /* directory -> (mkdirs of its inode so far) */
    struct op *ops;
    size_t nops, cap;
    long long end;       /* the ledger's size */
};

/* Seeded choices; with seed 0 every choice is the worst case. */
struct chooser {
    unsigned long long state;
    int seeded;
};
int choose(struct chooser *c, int one_in); /* true with probability 1/one_in; worst case: true */
long long choose_range(struct chooser *c, long long lo, long long hi); /* [lo, hi]; worst: lo */

static inline ull life_key(ull dev, int gen)
{
    return dev ^ ((ull)gen << 48);
}
int dir_life(const struct ledger *lg, ull dev, ull ino); /* the current life of a directory inode */

/* powercut_names.c: undoes the entries no directory sync made durable;
 * returns the number undone, -1 on an error. */
long long undo_names(const struct ledger *lg, const char *root, const char *keep,
                     struct chooser *c);
int remove_tree(const char *path);

#endif
