/* The parked session (park.h). */
#include "park.h"
#include "workspace.h"
#include "mini/clock.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>

char *park_key(const struct mini_profile *p)
{
    cJSON *pj = mini_profile_to_json(p);
    char *key = pj ? cJSON_PrintUnformatted(pj) : NULL;
    cJSON_Delete(pj);
    return key;
}

void park_put(struct park *pk, struct session *ss, char *key, const char *workspace, int ws_fd, uid_t owner_uid,
              gid_t owner_gid)
{
    pk->ss = ss;
    pk->key = key;
    pk->workspace = strdup(workspace);
    pk->ws_fd = ws_fd;
    pk->owner_uid = owner_uid;
    pk->owner_gid = owner_gid;
    pk->until = mini_mono_ns() + (int64_t)PARK_MS * 1000000;
}

struct session *park_take(struct park *pk)
{
    struct session *ss = pk->ss;
    pk->ss = NULL;
    free(pk->key);
    pk->key = NULL;
    free(pk->workspace);
    pk->workspace = NULL;
    pk->ws_fd = -1;
    return ss;
}

/* fd b is the directory a is, on the same mount; *owner: b's owner. */
static bool same_dir_fd(int a, int b, uid_t *owner)
{
    struct statx x, y;
    unsigned want = STATX_INO | STATX_UID | STATX_MNT_ID;
    if (statx(a, "", AT_EMPTY_PATH, want, &x) < 0 || statx(b, "", AT_EMPTY_PATH, want, &y) < 0 ||
        (x.stx_mask & want) != want || (y.stx_mask & want) != want)
        return false;
    *owner = y.stx_uid;
    return x.stx_dev_major == y.stx_dev_major && x.stx_dev_minor == y.stx_dev_minor && x.stx_ino == y.stx_ino &&
        x.stx_mnt_id == y.stx_mnt_id;
}

bool park_matches(const struct park *pk, const char *workspace, int ws_fd, const struct mini_profile *p)
{
    uid_t owner;
    if (!pk->ss || !pk->workspace || strcmp(pk->workspace, workspace) != 0 || !same_dir_fd(pk->ws_fd, ws_fd, &owner))
        return false;
    /* The ids the session's open would give now: the directory may have
     * changed hands since. */
    if (geteuid() == 0 && (owner != pk->owner_uid || mini_ws_owner_group(owner) != pk->owner_gid))
        return false;
    char *key = park_key(p);
    bool same = key && strcmp(key, pk->key) == 0;
    free(key);
    return same;
}

int park_timeout(const struct park *pk)
{
    if (!pk->ss)
        return -1;
    int64_t left = pk->until - mini_mono_ns();
    return left <= 0 ? 0 : (int)(left / 1000000 + 1);
}
