#include "uidrange.h"
#include "mini/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* "mini-sandboxd:BASE:COUNT" from a subordinate id file. */
static bool sub_range(const char *file, unsigned long *base, unsigned long *count)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return false;
    char line[256];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "mini-sandboxd:%lu:%lu", base, count) == 2;
    fclose(f);
    return found;
}

/* Make the directory `name` (in `at`) if missing and open it, never
 * through a symlink; it must be root's and writable by root alone, or
 * another user could put lock files there, or take them away. */
static int safe_dir(int at, const char *name, const char *path, struct mini_err *e)
{
    if (mkdirat(at, name, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "creating the uid lock directory %s", path);
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno,
                            "the uid lock directory %s is not a directory (a symlink is refused); remove it and "
                            "start the daemon again",
                            path);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int err = errno;
        close(fd);
        return mini_err_sys(e, MINI_E_IO, err, "%s", path);
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
        close(fd);
        return mini_err_set(e, MINI_E_IO,
                            "the uid lock directory %s belongs to uid %u with mode %04o: it must be root's and "
                            "writable by root alone; remove it and start the daemon again",
                            path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    }
    return fd;
}

int mini_uid_range_init(struct mini_uid_range *r, struct mini_err *e)
{
    *r = (struct mini_uid_range){ .dir = -1 };
    unsigned long ub = MINI_UID_RANGE_BASE, uc = MINI_UID_RANGE_COUNT, gb = ub, gc = uc;
    bool have_u = sub_range("/etc/subuid", &ub, &uc), have_g = sub_range("/etc/subgid", &gb, &gc);
    if (have_u != have_g)
        return mini_err_set(e, MINI_E_IO,
                            "/etc/subuid and /etc/subgid must both have a mini-sandboxd line, or neither");
    if (ub == 0 || gb == 0 || uc == 0 || gc == 0 || ub + uc > 0xfffffffful || gb + gc > 0xfffffffful)
        return mini_err_set(e, MINI_E_IO, "the mini-sandboxd line of /etc/subuid or /etc/subgid is not a usable range");
    unsigned count = (unsigned)(uc < gc ? uc : gc);
    if (count > MINI_UID_RANGE_COUNT)
        count = MINI_UID_RANGE_COUNT;
    int parent = safe_dir(AT_FDCWD, MINI_UID_LOCK_PARENT, MINI_UID_LOCK_PARENT, e);
    if (parent < 0)
        return -1;
    int dir = safe_dir(parent, "uids", MINI_UID_LOCK_DIR, e);
    close(parent);
    if (dir < 0)
        return -1;
    unsigned first = (unsigned)(ub / MINI_UID_BLOCK), n = (unsigned)((ub + count - 1) / MINI_UID_BLOCK) - first + 1;
    unsigned char *used = calloc((count + 7) / 8, 1);
    int *lock = malloc(n * sizeof *lock);
    if (!used || !lock) {
        free(used);
        free(lock);
        close(dir);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    for (unsigned b = 0; b < n; b++)
        lock[b] = -1;
    *r = (struct mini_uid_range){ .uid_base = (uid_t)ub,
                                  .gid_base = (gid_t)gb,
                                  .count = count,
                                  .used = used,
                                  .dir = dir,
                                  .first_grid = first,
                                  .n_blocks = n,
                                  .lock = lock };
    return 0;
}

/* Block b's slots: [*lo, *hi). */
static void block_slots(const struct mini_uid_range *r, unsigned b, unsigned *lo, unsigned *hi)
{
    unsigned long start = (unsigned long)(r->first_grid + b) * MINI_UID_BLOCK, end = start + MINI_UID_BLOCK;
    *lo = start > r->uid_base ? (unsigned)(start - r->uid_base) : 0;
    *hi = end - r->uid_base < r->count ? (unsigned)(end - r->uid_base) : r->count;
}

static unsigned block_of(const struct mini_uid_range *r, unsigned slot)
{
    return (unsigned)(((unsigned long)r->uid_base + slot) / MINI_UID_BLOCK) - r->first_grid;
}

static bool slot_used(const struct mini_uid_range *r, unsigned s) { return r->used[s / 8] & (1u << (s % 8)); }

void mini_uid_range_free(struct mini_uid_range *r)
{
    if (!r->lock)
        return;
    for (unsigned b = 0; b < r->n_blocks; b++) {
        if (r->lock[b] < 0)
            continue;
        unsigned lo, hi;
        block_slots(r, b, &lo, &hi);
        bool busy = false;
        for (unsigned s = lo; s < hi && !busy; s++)
            busy = slot_used(r, s);
        /* Empty: given back cleanly, the next claimer need not look for
         * processes.  A session still holding a slot here may have left
         * some: the mark stays. */
        if (!busy && ftruncate(r->lock[b], 0) < 0)
            log_warn("uids: clearing the lock file of block %u: %s", (r->first_grid + b) * MINI_UID_BLOCK,
                     strerror(errno));
        close(r->lock[b]);
    }
    close(r->dir);
    free(r->lock);
    free(r->used);
    *r = (struct mini_uid_range){ .dir = -1 };
}

/* A process (any of its real, effective, saved or file-system ids) with a
 * uid in [ulo, uhi) or a gid in [glo, ghi): its pid, else 0. */
static pid_t ids_in_use(unsigned long ulo, unsigned long uhi, unsigned long glo, unsigned long ghi)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1; /* cannot tell: taken as in use */
    pid_t found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char path[sizeof de->d_name + 8], buf[1024];
        snprintf(path, sizeof path, "%s/status", de->d_name);
        int fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* gone meanwhile */
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        const char *u = strstr(buf, "\nUid:"), *g = strstr(buf, "\nGid:");
        unsigned long id[8];
        if (!u || !g || sscanf(u, "\nUid: %lu %lu %lu %lu", &id[0], &id[1], &id[2], &id[3]) != 4 ||
            sscanf(g, "\nGid: %lu %lu %lu %lu", &id[4], &id[5], &id[6], &id[7]) != 4) {
            found = -1;
            break;
        }
        for (int i = 0; i < 8 && !found; i++)
            if (i < 4 ? (id[i] >= ulo && id[i] < uhi) : (id[i] >= glo && id[i] < ghi))
                found = (pid_t)strtol(de->d_name, NULL, 10);
    }
    closedir(d);
    return found;
}

/* Claim block b: its lock file, created if missing (never through a
 * symlink), flock'ed without waiting.  A file that is not empty was not
 * given back cleanly: a daemon that had it was killed, and processes of
 * its sandboxes may still run (the sandbox dies with its daemon, but not
 * at once, and a zombie may wait for its reaper): the block is skipped
 * while any process has one of its ids.  The file then holds our pid
 * until we give it back.  false: not ours. */
static bool claim(struct mini_uid_range *r, unsigned b)
{
    unsigned long first = (unsigned long)(r->first_grid + b) * MINI_UID_BLOCK;
    char name[16];
    snprintf(name, sizeof name, "%lu", first);
    int fd = openat(r->dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
    if (fd < 0) {
        log_warn("uids: %s/%s: %s", MINI_UID_LOCK_DIR, name, strerror(errno));
        return false;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd); /* another daemon's */
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_nlink != 1) {
        log_warn("uids: %s/%s is not a lock file of root's: block skipped", MINI_UID_LOCK_DIR, name);
        close(fd);
        return false;
    }
    unsigned lo, hi;
    block_slots(r, b, &lo, &hi);
    pid_t pid = st.st_size > 0
        ? ids_in_use(first, first + MINI_UID_BLOCK, (unsigned long)r->gid_base + lo, (unsigned long)r->gid_base + hi)
        : 0;
    if (pid != 0) {
        if (pid > 0)
            log_info("uids %lu to %lu: a daemon that had them was killed and process %d still runs as one: "
                     "skipped",
                     first, first + MINI_UID_BLOCK - 1, (int)pid);
        else
            log_warn("uids %lu to %lu: /proc cannot be read to tell whether a process runs as one: skipped", first,
                     first + MINI_UID_BLOCK - 1);
        close(fd);
        return false;
    }
    char mark[16];
    int len = snprintf(mark, sizeof mark, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, mark, (size_t)len, 0) != len) {
        /* Unmarked, a kill -9 of ours would go unnoticed by the next
         * claimer. */
        log_warn("uids: marking %s/%s: %s", MINI_UID_LOCK_DIR, name, strerror(errno));
        close(fd);
        return false;
    }
    r->lock[b] = fd;
    log_info("uids %lu to %lu claimed (%s/%s)", first > r->uid_base ? first : r->uid_base,
             (unsigned long)r->uid_base + hi - 1, MINI_UID_LOCK_DIR, name);
    return true;
}

int mini_uid_range_peek(const struct mini_uid_range *r)
{
    if (!r->lock)
        return -1;
    for (unsigned i = 0; i < r->count;) {
        unsigned s = (r->next + i) % r->count, b = block_of(r, s);
        if (r->lock[b] < 0) {
            unsigned lo, hi;
            block_slots(r, b, &lo, &hi);
            i += hi - s; /* to the next block */
            continue;
        }
        if (!slot_used(r, s))
            return (int)s;
        i++;
    }
    return -1;
}

int mini_uid_range_take(struct mini_uid_range *r, struct mini_err *e)
{
    int s = mini_uid_range_peek(r);
    for (unsigned b = 0; s < 0 && r->lock && b < r->n_blocks; b++)
        if (r->lock[b] < 0 && claim(r, b)) {
            unsigned lo, hi;
            block_slots(r, b, &lo, &hi);
            s = (int)lo;
        }
    if (s < 0)
        return mini_err_set(e, MINI_E_BUSY,
                            "no uid of the range (%u from %u) is free: this daemon's are in use, and every other "
                            "block of %u is held by another daemon or still has processes (%s)",
                            r->count, (unsigned)r->uid_base, MINI_UID_BLOCK, MINI_UID_LOCK_DIR);
    r->used[s / 8] |= (unsigned char)(1u << (s % 8));
    /* Round robin within the daemon's blocks: a slot is not given again
     * soon after its session ended. */
    r->next = ((unsigned)s + 1) % r->count;
    return s;
}

void mini_uid_range_put(struct mini_uid_range *r, int slot)
{
    if (r->used && slot >= 0 && (unsigned)slot < r->count)
        r->used[slot / 8] &= (unsigned char)~(1u << (slot % 8));
}
