/* The state directory, the TMPDIR parent, and the sweep of what dead
 * daemons left (statedir.h). */
#include "statedir.h"
#include "mini/io.h"
#include "mini/log.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int statedir_init(struct statedir *sd, const char *dir, struct mini_err *e)
{
    sd->dir = dir;
    sd->sweep_pending = true;
    if (asprintf(&sd->root_dir, "%s/root", dir) < 0) {
        sd->root_dir = NULL;
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    if (mkdir(sd->root_dir, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", sd->root_dir);
    return 0;
}

/* The directories of a session's writable overlay on the profile's
 * binds: <state>/sessions/<daemon pid>-<session>/{upper,work}, reached by
 * the sandbox through an fd (the session directory is 0711), owned by the
 * sandbox's host ids.  Removed with the session. */
int statedir_overlay(struct statedir *sd, const char *sid, uid_t uid, gid_t gid, char **path_out, struct mini_err *e)
{
    char *dir = NULL, path[4096];
    statedir_sweep(sd);
    if (statedir_ensure(sd, e) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/sessions", sd->dir);
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", path);
    /* This daemon's owner lock (<state>/sessions-<pid>.lock) comes before
     * its first overlay, so that a daemon starting meanwhile never takes
     * those overlays for a dead daemon's (and is made again if the state
     * dir was removed). */
    char lock[4096 + 32];
    snprintf(lock, sizeof lock, "%s/sessions-%d.lock", sd->dir, (int)getpid());
    if (sd->sessions_lock < 0 || mini_owner_lock_lost(sd->sessions_lock, lock)) {
        mini_close(sd->sessions_lock);
        if ((sd->sessions_lock = mini_owner_lock(lock, false, e)) < 0)
            return -1;
    }
    if (asprintf(&dir, "%s/%d-%s", path, (int)getpid(), sid) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    *path_out = dir;
    if (mkdir(dir, 0711) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", dir);
    static const char *const sub[] = { "upper", "work" };
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, sub[i]);
        if (mkdir(path, 0700) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "creating %s", path);
        if (geteuid() == 0 && chown(path, uid, gid) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "creating %s: chown", path);
    }
    return 0;
}

/* Whether the daemon with this pid, which made entries in sessions/, is
 * gone: its owner lock <state>/sessions-<pid>.lock is free (or, from a
 * daemon before these locks, its pid runs no process here), or it is this
 * daemon's own pid, which was free when it started. */
static bool sessions_owner_dead(const char *state, long pid)
{
    if (pid == getpid())
        return true;
    char lock[4096 + 32];
    snprintf(lock, sizeof lock, "%s/sessions-%ld.lock", state, pid);
    int r = mini_owner_lock_free(lock, false, NULL);
    return r >= 0 ? r == 1 : !mini_pid_running((pid_t)pid);
}

/* The Landlock path's TMPDIRs of daemons that are gone:
 * /tmp/mini-sandboxd.XXXXXX directories of ours whose owner lock is free. */
static void sweep_tmp(void)
{
    DIR *d = opendir("/tmp");
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, "mini-sandboxd.", 14) != 0)
            continue;
        char dir[300];
        struct stat st;
        int fd = -1;
        snprintf(dir, sizeof dir, "/tmp/%s", de->d_name);
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            mini_owner_lock_free(dir, true, &fd) != 1)
            continue;
        struct mini_err e;
        if (mini_rm_rf(dir, &e) < 0)
            log_warn("removing a dead daemon's TMPDIRs: %s", e.msg);
        else
            log_info("removed a dead daemon's TMPDIRs %s", dir);
        close(fd);
    }
    closedir(d);
}

void statedir_sweep(struct statedir *sd)
{
    if (!sd->sweep_pending)
        return;
    sd->sweep_pending = false;
    sweep_tmp();
    const char *state = sd->dir;
    char path[4096];
    snprintf(path, sizeof path, "%s/sessions", state);
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d));) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (end == de->d_name || pid <= 0 || *end != '-' || !sessions_owner_dead(state, pid))
            continue;
        char dir[4096 + 256];
        struct mini_err e;
        snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
        if (mini_rm_rf(dir, &e) < 0)
            log_warn("removing a dead daemon's overlay: %s", e.msg);
        else
            log_info("removed a dead daemon's overlay %s", dir);
    }
    if (d)
        closedir(d);
    /* Then the locks, once nothing they covered is left. */
    if (!(d = opendir(state)))
        return;
    for (struct dirent *de; (de = readdir(d));) {
        char *end;
        if (strncmp(de->d_name, "sessions-", 9) != 0)
            continue;
        long pid = strtol(de->d_name + 9, &end, 10);
        if (end == de->d_name + 9 || pid <= 0 || strcmp(end, ".lock") != 0 || !sessions_owner_dead(state, pid))
            continue;
        char lock[4096 + 256];
        snprintf(lock, sizeof lock, "%s/%s", state, de->d_name);
        unlink(lock);
    }
    closedir(d);
}

void statedir_fini(struct statedir *sd)
{
    if (sd->sessions_lock >= 0) {
        char lock[4096 + 32];
        snprintf(lock, sizeof lock, "%s/sessions-%d.lock", sd->dir, (int)getpid());
        if (!mini_owner_lock_lost(sd->sessions_lock, lock))
            unlink(lock);
        mini_close(sd->sessions_lock);
        sd->sessions_lock = -1;
    }
    if (sd->tmp_parent) {
        struct mini_err e;
        if (mini_rm_rf(sd->tmp_parent, &e) < 0)
            log_warn("%s", e.msg);
        free(sd->tmp_parent);
        sd->tmp_parent = NULL;
    }
    mini_close(sd->tmp_lock);
    sd->tmp_lock = -1;
    free(sd->root_dir);
    sd->root_dir = NULL;
}

int statedir_ensure(struct statedir *sd, struct mini_err *e)
{
    struct stat st;
    if (stat(sd->root_dir, &st) == 0)
        return 0;
    const char *dir = sd->dir;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "the state directory %s is gone and cannot be made again", dir);
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return mini_err_set(e, MINI_E_IO,
                            "the state directory %s was replaced: it must be a directory owned by "
                            "uid %u with mode 0700",
                            dir, (unsigned)geteuid());
    if (mkdir(sd->root_dir, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", sd->root_dir);
    log_warn("the state directory %s was removed under the daemon: made it again", dir);
    return 0;
}

/* The degraded path's private TMPDIR: under /tmp (every uid can reach
 * it; the daemon's state directory is private), owned by the sandbox's
 * host ids.  Landlock lets the command write there and nowhere else but
 * the workspace. */
char *statedir_tmpdir(struct statedir *sd, uid_t uid, gid_t gid, struct mini_err *e)
{
    /* They live in one directory of this daemon's, held by its owner lock
     * (0711: each sandbox reaches its own and cannot rename or remove
     * it), so that the next daemon removes them if this one is killed. */
    if (sd->tmp_lock < 0 || mini_owner_lock_lost(sd->tmp_lock, sd->tmp_parent)) {
        mini_close(sd->tmp_lock);
        sd->tmp_lock = -1;
        free(sd->tmp_parent);
        if (!(sd->tmp_parent = strdup("/tmp/mini-sandboxd.XXXXXX"))) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            return NULL;
        }
        if (!mkdtemp(sd->tmp_parent) || chmod(sd->tmp_parent, 0711) < 0) {
            mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating a directory for private TMPDIRs in /tmp");
        } else if ((sd->tmp_lock = mini_owner_lock(sd->tmp_parent, true, e)) < 0) {
            rmdir(sd->tmp_parent);
        }
        if (sd->tmp_lock < 0) {
            free(sd->tmp_parent);
            sd->tmp_parent = NULL;
            return NULL;
        }
    }
    char *dir = NULL;
    if (asprintf(&dir, "%s/t.XXXXXX", sd->tmp_parent) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    if (!mkdtemp(dir)) {
        mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating a private TMPDIR in %s", sd->tmp_parent);
        free(dir);
        return NULL;
    }
    if (geteuid() == 0 && chown(dir, uid, gid) < 0) {
        mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "chown %s", dir);
        rmdir(dir);
        free(dir);
        return NULL;
    }
    return dir;
}
