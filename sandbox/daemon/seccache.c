/* The seccomp program cache (seccache.h). */
#include "seccache.h"

#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

struct seccache_entry {
    struct seccache_entry *next;
    struct seccache *cache; /* whose list it is on (NULL: on none, the cache is off) */
    char *key;
    unsigned refs; /* the sessions holding it */
    struct mini_bpf bpf;
};

static void entry_free(struct seccache_entry *c)
{
    mini_bpf_free(&c->bpf);
    free(c->key);
    free(c);
}

/* Drop the idle entries past the first SECCACHE_IDLE_MAX (the list is
 * most recently used first). */
static void trim(struct seccache *sc)
{
    size_t idle = 0;
    for (struct seccache_entry **pc = &sc->list; *pc;) {
        struct seccache_entry *c = *pc;
        if (c->refs || ++idle <= SECCACHE_IDLE_MAX) {
            pc = &c->next;
            continue;
        }
        *pc = c->next;
        entry_free(c);
    }
}

struct seccache_entry *seccache_get(struct seccache *sc, const struct mini_profile *p)
{
    cJSON *pj = mini_profile_to_json(p);
    char *key = pj ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(pj, "seccomp")) : NULL;
    cJSON_Delete(pj);
    if (!key)
        return NULL;
    struct seccache_entry *c = NULL;
    for (struct seccache_entry **pc = &sc->list; sc->enabled && *pc; pc = &(*pc)->next)
        if (strcmp((*pc)->key, key) == 0) {
            c = *pc;
            *pc = c->next; /* to the front, below */
            free(key);
            break;
        }
    if (!c) {
        if (!(c = calloc(1, sizeof *c))) {
            free(key);
            return NULL;
        }
        c->key = key;
    }
    c->refs++;
    if (!sc->enabled)
        return c;
    c->cache = sc;
    c->next = sc->list;
    sc->list = c;
    trim(sc);
    return c;
}

void seccache_put(struct seccache_entry *c)
{
    if (!c || --c->refs > 0)
        return;
    if (c->cache)
        trim(c->cache);
    else
        entry_free(c);
}

const struct mini_bpf *seccache_program(struct seccache_entry *c) { return c->bpf.len ? &c->bpf : NULL; }

const struct mini_bpf *seccache_compile(struct seccache_entry *c, const struct mini_profile *p, struct mini_err *e)
{
    if (!c->bpf.len && mini_seccomp_compile(&p->seccomp, &c->bpf, e) < 0)
        return NULL;
    return &c->bpf;
}

size_t seccache_count(const struct seccache *sc)
{
    size_t n = 0;
    for (const struct seccache_entry *c = sc->list; c; c = c->next)
        n++;
    return n;
}

void seccache_fini(struct seccache *sc)
{
    while (sc->list) {
        struct seccache_entry *c = sc->list;
        sc->list = c->next;
        entry_free(c);
    }
}
