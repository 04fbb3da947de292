/* The compiled seccomp programs, one per distinct policy (a profile's
 * seccomp section as canonical JSON).  Each open session holds its
 * policy's entry; of the entries no session holds, the most recently used
 * SECCACHE_IDLE_MAX are kept, so that clients sending ever new policies
 * (profile_data) cannot grow the daemon without bound.  Off (--caches=off):
 * every session gets an entry of its own, compiled for it and freed with
 * it. */
#ifndef MINI_SANDBOXD_SECCACHE_H
#define MINI_SANDBOXD_SECCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include "mini/err.h"
#include "mini/profile.h"
#include "seccomp_prog.h"

/* Programs kept compiled that no open session uses: the sessions' own are
 * kept too, so the cache holds at most this plus the open sessions. */
#define SECCACHE_IDLE_MAX 16

struct seccache_entry;

struct seccache {
    bool enabled;
    struct seccache_entry *list; /* most recently used first */
};

/* The entry of the profile's policy, held for the caller (seccache_put
 * gives it back), made when there is none (its program not compiled yet);
 * NULL when out of memory. */
struct seccache_entry *seccache_get(struct seccache *sc, const struct mini_profile *p);
void seccache_put(struct seccache_entry *c);
/* The entry's program, or NULL while it is not compiled. */
const struct mini_bpf *seccache_program(struct seccache_entry *c);
/* The program, compiled on first use; NULL with e filled when it does not
 * compile (the entry stays, uncompiled). */
const struct mini_bpf *seccache_compile(struct seccache_entry *c, const struct mini_profile *p, struct mini_err *e);
/* How many programs the cache holds (stats.seccomp_programs). */
size_t seccache_count(const struct seccache *sc);
void seccache_fini(struct seccache *sc);

#endif
